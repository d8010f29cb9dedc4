package ab

import (
	"fmt"
	"strings"

	"github.com/proxysim/proxysim/internal/sim"
)

// Metric is a benchmark's figure of merit as a table shows it.
type Metric struct {
	Name         string `json:"name"`
	Units        string `json:"units"`
	HigherBetter bool   `json:"higher_better"`
	Stat         string `json:"statistic"` // the default statistic (the reports')
	// NoCost: the cost model leaves the figure as it is (a latency on one
	// task's path, where the machine's overhead spread per operation
	// would say nothing).
	NoCost bool `json:"no_cost_model,omitempty"`
	// value reads the raw figure from a run's figures.
	value func(b *sim.BenchFigures) (float64, bool)
}

// Value is the metric's raw figure of a run; false if the run has none
// (hackbench did not finish, no requests were served).
func (m Metric) Value(b *sim.BenchFigures) (float64, bool) {
	if b == nil {
		return 0, false
	}
	return m.value(b)
}

var (
	mTime = Metric{Name: "time", Units: "Normalized time in seconds", Stat: AMean,
		value: func(b *sim.BenchFigures) (float64, bool) { return float64(b.TimeNs) / 1e9, b.Finished && b.TimeNs > 0 }}
	mThroughput = Metric{Name: "throughput", Units: "Normalized throughput (requests per virtual second)", HigherBetter: true, Stat: AMean,
		value: func(b *sim.BenchFigures) (float64, bool) { return b.RequestsPerSec, b.Requests > 0 }}
	mWakeupP99 = Metric{Name: "wakeup_p99", Units: "Normalized 99th percentile wake-up latency in us", Stat: Median,
		value: func(b *sim.BenchFigures) (float64, bool) {
			return float64(b.P99WakeupLatencyNs) / 1e3, b.Requests > 0
		}}
	mRequestP99 = Metric{Name: "request_p99", Units: "Normalized 99th percentile request latency in us", Stat: Median,
		value: func(b *sim.BenchFigures) (float64, bool) {
			return float64(b.P99RequestLatencyNs) / 1e3, b.Requests > 0
		}}
	mRPS = Metric{Name: "rps", Units: "Normalized requests per second", HigherBetter: true, Stat: AMean,
		value: func(b *sim.BenchFigures) (float64, bool) { return b.RequestsPerSec, b.Requests > 0 }}
	// The inversion benchmark's: the RT threads' mutex waits (0 when they
	// never had to wait) and the fair holders' critical sections per
	// second.
	mRTWaitP99 = Metric{Name: "rt_wait_p99", Units: "Normalized 99th percentile mutex wait of the RT threads in us", Stat: AMean,
		value: func(b *sim.BenchFigures) (float64, bool) { return float64(b.Wait("rt").P99Ns) / 1e3, b.Requests > 0 }}
	mRTWaitMean = Metric{Name: "rt_wait_mean", Units: "Normalized mean mutex wait of the RT threads in us", Stat: AMean,
		value: func(b *sim.BenchFigures) (float64, bool) { return float64(b.Wait("rt").MeanNs) / 1e3, b.Requests > 0 }}
	mFairRPS = Metric{Name: "fair_rps", Units: "Normalized critical sections of the fair holders per second", HigherBetter: true, Stat: AMean,
		value: func(b *sim.BenchFigures) (float64, bool) { return b.RequestsPerSec, b.Requests > 0 }}
)

// chainMetric reads one of the chain benchmark's figures (in us), present
// when the run had waits (and, for the unwinding, unwinds).
func chainMetric(name, units string, unwind bool, f func(c *sim.ChainFigures) int64) Metric {
	return Metric{Name: name, Units: units, Stat: AMean, NoCost: true, value: func(b *sim.BenchFigures) (float64, bool) {
		c := b.Chain
		if c == nil || c.Waits == 0 || unwind && c.Unwinds == 0 {
			return 0, false
		}
		return float64(f(c)) / 1e3, true
	}}
}

var (
	mChainMean   = chainMetric("wait_mean", "Normalized mean mutex wait of the RT task in us", false, func(c *sim.ChainFigures) int64 { return c.MeanWaitNs })
	mChainP90    = chainMetric("wait_p90", "Normalized 90th percentile mutex wait of the RT task in us", false, func(c *sim.ChainFigures) int64 { return c.P90WaitNs })
	mChainMax    = chainMetric("wait_max", "Normalized worst mutex wait of the RT task in us", false, func(c *sim.ChainFigures) int64 { return c.MaxWaitNs })
	mChainUnwind = chainMetric("unwind", "Normalized mean unwinding (last lock's release to the RT task's acquisition) in us", true, func(c *sim.ChainFigures) int64 { return c.MeanUnwindNs })
)

// Metrics lists the metrics of a benchmark, its default first.
func Metrics(bench string) []Metric {
	switch bench {
	case "hackbench":
		return []Metric{mTime}
	case "tbench", "netperf":
		return []Metric{mThroughput}
	case "schbench":
		return []Metric{mWakeupP99, mRequestP99, mRPS}
	case "inversion":
		return []Metric{mRTWaitP99, mRTWaitMean, mFairRPS}
	case "chain":
		return []Metric{mChainMean, mChainP90, mChainMax, mChainUnwind}
	}
	return nil
}

// FindMetric returns the named metric of bench ("" for its default).
func FindMetric(bench, name string) (Metric, error) {
	ms := Metrics(bench)
	if len(ms) == 0 {
		return Metric{}, fmt.Errorf("%q is not a benchmark workload", bench)
	}
	if name == "" {
		return ms[0], nil
	}
	var names []string
	for _, m := range ms {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return Metric{}, fmt.Errorf("%s has no metric %q (metrics: %s)", bench, name, strings.Join(names, ", "))
}

// caseLabel and caseHeader follow the reports: "4-groups" under "Case:",
// tbench's bare client counts under "Clients:", netperf's "4-clients",
// schbench's worker counts under "#workers:".
func caseLabel(bench string, c int) string {
	switch bench {
	case "hackbench":
		return fmt.Sprintf("%d-groups", c)
	case "netperf":
		return fmt.Sprintf("%d-clients", c)
	case "chain":
		return fmt.Sprintf("%d-links", c)
	}
	return fmt.Sprint(c)
}

func caseHeader(bench string) string {
	switch bench {
	case "tbench", "netperf":
		return "Clients:"
	case "schbench":
		return "#workers:"
	case "inversion":
		return "#hogs:"
	}
	return "Case:"
}
