package sim

import (
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
	w := ClassWaits{Class: class, N: h.N, MaxNs: h.Max, P90Ns: h.QuantileBound(0.90), P99Ns: h.QuantileBound(0.99)}
	if h.N > 0 {
		w.MeanNs = h.Total / int64(h.N)
	}
	return w
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
				rtWait.Merge(&p.Stats.ContendedWait)
			} else {
				fairWait.Merge(&p.Stats.ContendedWait)
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
