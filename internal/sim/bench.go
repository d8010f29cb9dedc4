package sim

import (
	"slices"

	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/workload"
)

// StopAllExited is the stop reason of a run whose tasks have all exited.
const StopAllExited = "all tasks exited"

// Proxy-execution levels (--proxy-exec).
const (
	LevelOff      = "off"
	LevelSingleRQ = "single-rq"
	LevelFull     = "full"
)

// ProxyLevel names the run's proxy-execution level.
func (o Options) ProxyLevel() string {
	switch {
	case !o.Proxy:
		return LevelOff
	case o.ProxySingleRQ:
		return LevelSingleRQ
	}
	return LevelFull
}

// SetProxyLevel sets Proxy and ProxySingleRQ from a level name ("on" is
// "full"); false if the name is none of them.
func (o *Options) SetProxyLevel(level string) bool {
	switch level {
	case LevelOff:
		o.Proxy, o.ProxySingleRQ = false, false
	case LevelSingleRQ:
		o.Proxy, o.ProxySingleRQ = true, true
	case LevelFull, "on":
		o.Proxy, o.ProxySingleRQ = true, false
	default:
		return false
	}
	return true
}

// BenchFigures are a benchmark workload's figures of merit, in virtual
// time. Figures a benchmark does not have are zero.
type BenchFigures struct {
	Bench  string         `json:"bench"`
	Kind   string         `json:"kind"` // finish, throughput, latency
	Case   int            `json:"case"`
	Params map[string]int `json:"params"`
	// Finished (hackbench) says whether every task exited within the
	// simulated time; TimeNs is when the last one did.
	Finished bool  `json:"finished"`
	TimeNs   int64 `json:"time_ns,omitempty"`
	// Requests are the completed waits of the benchmark's serving groups
	// (tbench/netperf servers, schbench workers, hackbench receivers'
	// messages); RequestsPerSec divides them by the virtual time.
	Requests       uint64  `json:"requests"`
	RequestsPerSec float64 `json:"requests_per_sec"`
	// P99s (upper bounds: the top of the histogram bucket holding the
	// p99) over the serving groups: wake-up latency (try_to_wake_up to
	// running) and request latency (the waker's complete() to the task's
	// next wait).
	P99WakeupLatencyNs  int64 `json:"p99_wakeup_latency_ns"`
	P99RequestLatencyNs int64 `json:"p99_request_latency_ns"`
	// Waits (inversion) are the serving groups' mutex waits by
	// scheduling class, "rt" and "fair".
	Waits []ClassWaits `json:"waits,omitempty"`
	// Chain holds the chain benchmark's figures (Summary.Chain).
	Chain *ChainFigures `json:"chain,omitempty"`
}

// ClassWaits is the distribution of one scheduling class's mutex waits
// (from the fast path's failure to the acquisition, spinning or asleep): how many, and their
// mean, p90, p99 (upper bounds: the top of the histogram bucket) and max.
type ClassWaits struct {
	Class  string `json:"class"`
	N      uint64 `json:"n"`
	MeanNs int64  `json:"mean_ns"`
	P90Ns  int64  `json:"p90_ns"`
	P99Ns  int64  `json:"p99_ns"`
	MaxNs  int64  `json:"max_ns"`
}

// Wait returns the waits of class, or a zero ClassWaits.
func (b *BenchFigures) Wait(class string) ClassWaits {
	for _, w := range b.Waits {
		if w.Class == class {
			return w
		}
	}
	return ClassWaits{Class: class}
}

func classWaits(class string, h *stats.Hist) ClassWaits {
	return ClassWaits{Class: class, N: h.N, MeanNs: mean(h), MaxNs: h.Max, P90Ns: h.QuantileBound(0.90), P99Ns: h.QuantileBound(0.99)}
}

// ChainFigures are a chain of locks' figures (workload.Chain): the
// waiter group's contended acquisitions of the head mutex (Waits: their
// number; mean exact, p90 an upper bound like the summary's p99s, max
// exact) and, for the waits during which the end mutex was released, the
// unwinding from its last release to the acquisition (Unwinds of them).
// Every figure spans several CPUs' clocks: exact to the run's clock skew
// bound per hop.
type ChainFigures struct {
	Waiter       string `json:"waiter"`
	Head         string `json:"head"`
	End          string `json:"end"`
	Waits        uint64 `json:"waits"`
	MeanWaitNs   int64  `json:"mean_wait_ns"`
	P90WaitNs    int64  `json:"p90_wait_ns"`
	MaxWaitNs    int64  `json:"max_wait_ns"`
	Unwinds      uint64 `json:"unwinds"`
	MeanUnwindNs int64  `json:"mean_unwind_ns"`
	P90UnwindNs  int64  `json:"p90_unwind_ns"`
	MaxUnwindNs  int64  `json:"max_unwind_ns"`
}

// chainFigures matches the waiter group's acquisitions of the chain's head
// with the releases of its end (every task's, in time order).
func chainFigures(sc *workload.Scenario, tasks []*task.Task) *ChainFigures {
	c := sc.Chain
	if c == nil {
		return nil
	}
	f := &ChainFigures{Waiter: sc.Groups[c.Waiter].Name, Head: sc.Mutexes[c.Head], End: sc.Mutexes[c.End]}
	var releases []int64
	type acq struct{ start, at int64 }
	var acqs []acq
	for _, p := range tasks {
		if p == nil {
			continue
		}
		for _, mk := range p.Stats.MutexMarks {
			switch {
			case int(mk.Mutex) == c.End && mk.Start < 0:
				releases = append(releases, mk.At)
			case int(mk.Mutex) == c.Head && mk.Start >= 0 && p.Group == c.Waiter:
				acqs = append(acqs, acq{mk.Start, mk.At})
			}
		}
	}
	slices.Sort(releases)
	var wait, unwind stats.Hist
	for _, a := range acqs {
		wait.Add(a.at - a.start)
		// the last release of the end mutex at or before the acquisition
		i, _ := slices.BinarySearch(releases, a.at+1)
		if i > 0 && releases[i-1] >= a.start {
			unwind.Add(a.at - releases[i-1])
		}
	}
	f.Waits, f.MaxWaitNs, f.P90WaitNs = wait.N, wait.Max, wait.QuantileBound(0.9)
	f.Unwinds, f.MaxUnwindNs, f.P90UnwindNs = unwind.N, unwind.Max, unwind.QuantileBound(0.9)
	f.MeanWaitNs, f.MeanUnwindNs = mean(&wait), mean(&unwind)
	return f
}

func benchFigures(sc *workload.Scenario, tasks []*task.Task, simTime int64) *BenchFigures {
	mt := sc.Merit
	if mt == nil {
		return nil
	}
	b := &BenchFigures{Bench: mt.Bench, Kind: mt.Kind, Case: mt.Case, Params: mt.Param, Finished: true}
	serving := map[int]bool{}
	for _, g := range mt.Groups {
		serving[g] = true
	}
	var wake, userWake, req, rtWait, fairWait stats.Hist
	var fairReqs uint64
	for _, p := range tasks {
		if p == nil {
			continue
		}
		if p.Stats.ExitAt == 0 {
			b.Finished = false
		} else if p.Stats.ExitAt > b.TimeNs {
			b.TimeNs = p.Stats.ExitAt
		}
		if serving[p.Group] {
			b.Requests += p.Stats.Requests
			wake.Merge(&p.Stats.WakeLatency)
			userWake.Merge(&p.Stats.UserWake)
			req.Merge(&p.Stats.ReqLatency)
			if p.RT() {
				rtWait.Merge(&p.Stats.MutexWait)
			} else {
				fairWait.Merge(&p.Stats.MutexWait)
				fairReqs += p.Stats.Requests
			}
		}
	}
	if mt.Kind != workload.MeritFinish {
		b.Finished, b.TimeNs = false, 0
	} else if !b.Finished {
		b.TimeNs = 0
	}
	span := simTime
	if b.Finished {
		span = b.TimeNs
	}
	if span > 0 {
		b.RequestsPerSec = float64(b.Requests) / (float64(span) / 1e9)
	}
	b.P99WakeupLatencyNs = wake.QuantileBound(0.99)
	if userWake.N > 0 {
		// The benchmark measures its wake-ups itself (schbench): its figure.
		b.P99WakeupLatencyNs = userWake.QuantileBound(0.99)
	}
	b.P99RequestLatencyNs = req.QuantileBound(0.99)
	if mt.Kind == workload.MeritInversion {
		b.Waits = []ClassWaits{classWaits("rt", &rtWait), classWaits("fair", &fairWait)}
		if span > 0 {
			// The figure of throughput is the fair holders' critical
			// sections: what the RT thread's gain costs them.
			b.RequestsPerSec = float64(fairReqs) / (float64(span) / 1e9)
		}
	}
	return b
}
