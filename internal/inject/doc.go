// Package inject holds proxysim's fault injectors for race hunting, after
// the kernel's locktorture (kernel/locking/locktorture.c) and the Go
// runtime's randomizeScheduler:
//
//   - Jitter widens race windows: at every yield point of the lock layer
//     (each acquire and release, so every lock-juggling window of the
//     protocol, and every cpu_relax() in ttwu and find_proxy_task) it
//     yields the goroutine or spins a little, with a seeded probability.
//   - Stutter pauses every CPU at an epoch barrier now and then and
//     releases them together, so that they collide on the same locks.
//
// (Affinity shuffling lives in internal/cpu, where set_cpus_allowed is.)
// Every injector counts what it saw and what it did, so a test can prove
// it fires at the rate it claims.
package inject
