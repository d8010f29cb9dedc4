// Package conductor is proxysim's serial mode: the same CPU goroutines and
// the same protocol code, but only one goroutine runs at a time. At every
// yield point (a spinlock acquire, failed try or release, a cpu_relax(), an
// IPI, a park at the epoch barrier) the running CPU hands control back,
// and the conductor picks the next one by a seeded strategy:
//
//   - time: the CPU with the smallest virtual clock first (discrete-event
//     order, for exact timing);
//   - random: uniformly among the runnable CPUs;
//   - pct:D: probabilistic concurrency testing (Burckhardt et al., ASPLOS
//     2010): random distinct priorities, the highest runnable priority
//     runs, and at D-1 random change points the running CPU drops to the
//     lowest priority.
//
// A failed try-lock is a yield, not a block: the lock layer asks again
// after others ran, so a lock held by a paused goroutine can never
// deadlock the conductor. Given the same seed, strategy and machine, the
// run is the same, event for event.
package conductor
