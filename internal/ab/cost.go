package ab

import (
	"fmt"
	"regexp"
	"strconv"
)

// Cost is the cost model: what each event that costs real time costs, in
// ns, on top of what the simulation already charges in virtual time (a
// context switch 1 us, a __schedule call 200 ns, a non-compute
// instruction 100 ns: cpu.DefaultConfig). Multiplied by a run's counts it
// gives the run's overhead; spread over the machine's CPUs it turns the
// raw figure of merit into the adjusted one (Adjust).
//
// The defaults are order-of-magnitude figures for a current x86 server,
// not measurements of this machine (see docs/benchmarks.md and
// `proxysim ab --calibrate`).
type Cost struct {
	ContextSwitch float64 `json:"context_switch_ns"`  // per context switch, beyond the 1 us charged
	Migration     float64 `json:"migration_ns"`       // per task_cpu change (cold caches, remote enqueue)
	IPI           float64 `json:"ipi_ns"`             // per IPI sent (send, interrupt entry, handler)
	LockAcquire   float64 `json:"lock_acquire_ns"`    // per raw spinlock acquisition (rq, pi, wait and blocked locks)
	LockContended float64 `json:"lock_contended_ns"`  // per acquisition whose first try failed (a cache-line bounce)
	JuggleRetry   float64 `json:"juggle_retry_ns"`    // per lock-juggling retry (a lock dropped and retaken)
	FPTStep       float64 `json:"find_proxy_step_ns"` // per find_proxy_task link walked
}

// DefaultCost is the cost model's written-down defaults. A
// find_proxy_task link costs nothing here: --proxy-costs charges it in
// virtual time, so the raw figures already hold it.
func DefaultCost() Cost {
	return Cost{ContextSwitch: 500, Migration: 2000, IPI: 1500, LockAcquire: 20, LockContended: 200, JuggleRetry: 300}
}

// Counter names a Result's Counts must hold for the cost model.
const (
	CountSwitches      = "context_switches"
	CountMigrations    = "migrations"
	CountIPIs          = "ipis"
	CountLockAcquire   = "spinlock_acquisitions"
	CountLockContended = "spinlock_contended"
	CountJuggle        = "lock_juggling_retries"
	CountFPTSpins      = "find_proxy_task_spins"
)

// Overhead is the model's cost of a run's events, in ns.
func (c Cost) Overhead(counts map[string]uint64) float64 {
	f := func(k string) float64 { return float64(counts[k]) }
	return c.ContextSwitch*f(CountSwitches) + c.Migration*f(CountMigrations) + c.IPI*f(CountIPIs) +
		c.LockAcquire*f(CountLockAcquire) + c.LockContended*f(CountLockContended) +
		c.JuggleRetry*f(CountJuggle) + c.FPTStep*f(CountFPTSpins)
}

// Adjust turns a raw figure into the cost-adjusted one. The overhead is
// spread evenly over the CPUs (a lower bound on its effect on a critical
// path): time to finish grows by overhead/CPUs; throughput is requests
// over the span plus overhead/CPUs; a latency grows by the mean overhead
// per request (the model cannot say how overhead lands on the tail).
func (c Cost) Adjust(m Metric, raw float64, r *Result) float64 {
	if m.NoCost {
		return raw
	}
	ov := c.Overhead(r.Counts)
	cpus := float64(max(r.CPUs, 1))
	switch m.Name {
	case "time":
		return raw + ov/cpus/1e9
	case "throughput", "rps", "fair_rps":
		span := float64(r.Bench.TimeNs)
		if !r.Bench.Finished {
			span = float64(r.SimTimeNs)
		}
		if span <= 0 {
			return raw
		}
		return float64(r.Bench.Requests) / ((span + ov/cpus) / 1e9)
	default: // latencies, in us
		if r.Bench.Requests == 0 {
			return raw
		}
		return raw + ov/float64(r.Bench.Requests)/1e3
	}
}

var (
	pipeRE      = regexp.MustCompile(`([0-9.]+)\s+usecs/op`)
	messagingRE = regexp.MustCompile(`Total time:\s*([0-9.]+)\s*\[sec\]`)
)

// ParsePerfPipe reads `perf bench sched pipe`'s usecs per round trip.
func ParsePerfPipe(out string) (float64, error) {
	m := pipeRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no \"usecs/op\" in perf bench sched pipe's output")
	}
	return strconv.ParseFloat(m[1], 64)
}

// ParsePerfMessaging reads `perf bench sched messaging`'s total seconds.
func ParsePerfMessaging(out string) (float64, error) {
	m := messagingRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no \"Total time: ... [sec]\" in perf bench sched messaging's output")
	}
	return strconv.ParseFloat(m[1], 64)
}

// Calibrate derives a cost model from perf's figures: pipeUsecs, the
// round trip of `perf bench sched pipe` (two context switches, two
// wake-ups, a pipe write and read each way), and messagingSec, the total
// of `perf bench sched messaging -g groups -l loops` (hackbench: groups x
// 20 x 20 x loops messages, each a write, a read and most a wake-up and
// two switches). What the simulation already charges (1 us per switch,
// 200 ns per __schedule, 100 ns per instruction) is taken off; the
// remainder of a switch is the context-switch cost. Migration and IPI
// costs scale from the switch cost by fixed ratios (perf measures
// neither), the lock costs stay at the defaults: a calibration fits one
// number per benchmark and no more.
func Calibrate(pipeUsecs, messagingSec float64, groups, loops int) Cost {
	c := DefaultCost()
	// per switch: half a round trip, less a pipe op and what is charged
	perSwitch := pipeUsecs*1000/2 - 1000 - 200 - 2*100
	if messagingSec > 0 && groups > 0 && loops > 0 {
		msgs := float64(groups * 20 * 20 * loops)
		perMsg := messagingSec * 1e9 / msgs // wall ns per message on the host's CPUs, all of them busy
		// a message costs about one switch on the path when the
		// machine is saturated: average the two estimates
		perSwitch = (perSwitch + perMsg - 1000 - 200 - 4*100) / 2
	}
	if perSwitch < 0 {
		perSwitch = 0
	}
	c.ContextSwitch = perSwitch
	d := DefaultCost()
	if d.ContextSwitch > 0 {
		k := c.ContextSwitch / d.ContextSwitch
		c.Migration, c.IPI = d.Migration*k, d.IPI*k
	}
	return c
}
