package ab

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/proxysim/proxysim/internal/sim"
	"time"
)

// PerOpCounts are the counts a table explains each case with, per
// operation (a request, message or transaction): context switches, mutex
// acquisitions, contended ones (the fast path failed: a spin or the slow
// path resolved them), waiters queued (the slow path: where proxy
// execution can engage), proxies run on the same runqueue, proxy
// migrations (proxy_migrate_task calls), return migrations, proxy
// deactivations, find_proxy_task re-picks, the virtual ns charged for the
// series' own work, sleeps on the benchmark's wait queues and futexes, and
// IPIs.
var PerOpCounts = []string{"context_switches", "mutex_acquires", "mutex_fastpath_misses", "mutex_contentions",
	"proxy_pick_same_rq", "proxy_migrations", "return_migrations", "proxy_deactivations", "find_proxy_task_retries",
	"proxy_cost_ns", "wait_queue_sleeps", "ipis"}

var perOpShort = map[string]string{
	"context_switches": "ctxsw", "mutex_acquires": "mutex_acq", "mutex_fastpath_misses": "mutex_cont", "mutex_contentions": "mutex_wait",
	"proxy_pick_same_rq": "proxy_pick", "proxy_migrations": "proxy_mig", "return_migrations": "ret_mig", "proxy_deactivations": "deact",
	"find_proxy_task_retries": "fpt_retry", "proxy_cost_ns": "cost_ns", "wait_queue_sleeps": "wq_sleep", "ipis": "ipi",
}

// Cell is one configuration's figures in one case.
type Cell struct {
	Config string    `json:"config"`
	Seeds  []uint64  `json:"seeds"`
	Values []float64 `json:"values"` // the raw figure per seed, in the metric's units
	// Missing counts seeds whose run has no figure (a hackbench that did
	// not finish) or is not in the file yet.
	Missing int     `json:"missing"`
	Stat    float64 `json:"stat"`
	CV      float64 `json:"cv_pct"`
	Ratio   float64 `json:"ratio"`
	PctImp  float64 `json:"pct_imp"`
	// The same under the cost model.
	Adjusted    []float64          `json:"adjusted_values"`
	AdjStat     float64            `json:"adjusted_stat"`
	AdjCV       float64            `json:"adjusted_cv_pct"`
	AdjRatio    float64            `json:"adjusted_ratio"`
	AdjPctImp   float64            `json:"adjusted_pct_imp"`
	PerOp       map[string]float64 `json:"counts_per_op"`
	Violations  int                `json:"violations"`
	MeanWallSec float64            `json:"mean_wall_sec"`
	// Waits (benchmarks that measure mutex waits by class) are each
	// class's waits over the seeds: counts and means averaged, p90 and
	// p99 the mean of the seeds' (upper bounds), max the largest.
	Waits []sim.ClassWaits `json:"waits,omitempty"`
	// SkewBoundNs is the largest clock skew bound among the cell's runs;
	// Inexact says it is larger than the one asked for (Spec.MaxSkewNs):
	// the figures are less exact than the table's header says.
	SkewBoundNs int64 `json:"skew_bound_ns"`
	Inexact     bool  `json:"inexact,omitempty"`
}

// Row is one case.
type Row struct {
	Case  int    `json:"case"`
	Label string `json:"label"`
	Cells []Cell `json:"cells"`
}

// Table is a matrix's A/B table.
type Table struct {
	Spec   Spec   `json:"spec"`
	Metric Metric `json:"metric"`
	Stat   string `json:"statistic"`
	Cost   Cost   `json:"cost_model"`
	Rows   []Row  `json:"rows"`
}

// Build computes the table of the results in f for its spec's cases and
// configs (the first config is the baseline), with statistic stat.
func Build(f *File, m Metric, stat string, cost Cost) *Table {
	t := &Table{Spec: f.Spec, Metric: m, Stat: stat, Cost: cost}
	done := f.Done()
	for _, c := range f.Spec.Cases {
		row := Row{Case: c, Label: caseLabel(f.Spec.Bench, c)}
		for _, cfg := range f.Spec.Configs {
			cell := Cell{Config: cfg, PerOp: map[string]float64{}}
			var wall float64
			n := 0
			for i := 0; i < f.Spec.Seeds; i++ {
				seed := f.Spec.FirstSeed + uint64(i)
				r := done[Job{c, cfg, seed}]
				if r == nil {
					cell.Missing++
					continue
				}
				cell.Violations += len(r.Violations)
				cell.SkewBoundNs = max(cell.SkewBoundNs, r.SkewBound())
				v, ok := m.Value(&r.Bench)
				if !ok {
					cell.Missing++
					continue
				}
				n++
				wall += float64(r.WallNs) / 1e9
				cell.Seeds = append(cell.Seeds, seed)
				cell.Values = append(cell.Values, v)
				cell.Adjusted = append(cell.Adjusted, cost.Adjust(m, v, r))
				if ops := float64(r.Bench.Requests); ops > 0 {
					for _, k := range PerOpCounts {
						cell.PerOp[k] += float64(r.Counts[k]) / ops
					}
				}
				cell.Waits = addWaits(cell.Waits, r.Bench.Waits)
			}
			if n > 0 {
				for k := range cell.PerOp {
					cell.PerOp[k] /= float64(n)
				}
				cell.MeanWallSec = wall / float64(n)
				for i := range cell.Waits {
					w := &cell.Waits[i]
					w.N /= uint64(n)
					w.MeanNs /= int64(n)
					w.P90Ns /= int64(n)
					w.P99Ns /= int64(n)
				}
			}
			cell.Inexact = f.Spec.MaxSkewNs > 0 && cell.SkewBoundNs > f.Spec.MaxSkewNs
			cell.Stat, cell.CV = Stat(stat, cell.Values), CV(cell.Values)
			cell.AdjStat, cell.AdjCV = Stat(stat, cell.Adjusted), CV(cell.Adjusted)
			row.Cells = append(row.Cells, cell)
		}
		for i := range row.Cells {
			b := &row.Cells[0]
			x := &row.Cells[i]
			x.Ratio, x.PctImp = Compare(x.Stat, b.Stat, m.HigherBetter)
			x.AdjRatio, x.AdjPctImp = Compare(x.AdjStat, b.AdjStat, m.HigherBetter)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// addWaits adds one run's class waits into the sums (max: the largest).
func addWaits(sum, ws []sim.ClassWaits) []sim.ClassWaits {
	for _, w := range ws {
		i := 0
		for i < len(sum) && sum[i].Class != w.Class {
			i++
		}
		if i == len(sum) {
			sum = append(sum, sim.ClassWaits{Class: w.Class})
		}
		t := &sum[i]
		t.N += w.N
		t.MeanNs += w.MeanNs
		t.P90Ns += w.P90Ns
		t.P99Ns += w.P99Ns
		t.MaxNs = max(t.MaxNs, w.MaxNs)
	}
	return sum
}

// cellText is a cell in the reports' format: "1.03 [ -2.88]( 2.71)".
func cellText(ratio, imp, cv float64) string {
	if math.IsNaN(ratio) || math.IsInf(ratio, 0) {
		return "  -- [   -- ](  -- )"
	}
	return fmt.Sprintf("%.2f [%6.2f](%5.2f)", ratio, imp, cv)
}

const rule = "=================================================================="

// WriteText prints the table as the series' reports do, then the raw
// statistic, the cost-adjusted table and the counts per operation.
func (t *Table) WriteText(w io.Writer) error {
	s := t.Spec
	interp := "Lower is better"
	if t.Metric.HigherBetter {
		interp = "Higher is better"
	}
	fmt.Fprintln(w, rule)
	spin := ""
	if s.NoOptimisticSpin {
		spin = ", no optimistic spinning"
	}
	if s.NewidleCostNs > 0 || s.NewidleCPUCostNs > 0 || s.NewidleTaskCostNs > 0 {
		spin += fmt.Sprintf(", newidle cost %s a domain + %s a CPU + %s a task", fmtDur(s.NewidleCostNs), fmtDur(s.NewidleCPUCostNs), fmtDur(s.NewidleTaskCostNs))
	}
	spin += ", proxy costs " + sim.FormatProxyCosts(s.ProxyCosts)
	fmt.Fprintf(w, "Test : %s (proxysim %s, %d CPUs %s, %d seeds from %d, virtual %s, strategy %s%s)\n", s.Bench, s.Workload, s.CPUs, s.Topology, s.Seeds, s.FirstSeed, fmtDur(s.SimTimeNs), s.Strategy, spin)
	fmt.Fprintf(w, "Clocks : skew bound %s (every latency spans CPUs whose clocks may differ by that much per cross-CPU event)\n", fmtSkew(s.MaxSkewNs))
	fmt.Fprintf(w, "Units : %s\n", t.Metric.Units)
	fmt.Fprintf(w, "Interpretation: %s\n", interp)
	fmt.Fprintf(w, "Statistic : %s\n", t.Stat)
	fmt.Fprintln(w, rule)
	head := func() {
		parts := []string{caseHeader(s.Bench)}
		for _, c := range s.Configs {
			parts = append(parts, c+"[pct imp](CV)")
		}
		fmt.Fprintln(w, strings.Join(parts, " "))
	}
	head()
	inexact := false
	for _, r := range t.Rows {
		parts := []string{r.Label}
		for _, c := range r.Cells {
			txt := cellText(c.Ratio, c.PctImp, c.CV)
			if c.Inexact {
				txt += "*"
				inexact = true
			}
			parts = append(parts, txt)
		}
		fmt.Fprintln(w, strings.Join(parts, " ")+t.missingNote(r))
	}
	if inexact {
		fmt.Fprintf(w, "* measured with a larger clock skew bound than %s (runs of an older results file): rerun them for figures this exact\n", fmtSkew(s.MaxSkewNs))
	}
	fmt.Fprintf(w, "\nRaw %s (%s, virtual time):\n", t.Stat, rawUnits(t.Metric))
	for _, r := range t.Rows {
		parts := []string{r.Label}
		for _, c := range r.Cells {
			parts = append(parts, fmt.Sprintf("%s %s", c.Config, fmtVal(c.Stat)))
		}
		fmt.Fprintln(w, strings.Join(parts, "  "))
	}
	fmt.Fprintf(w, "\nCost-adjusted (%s):\n", t.Cost)
	head()
	for _, r := range t.Rows {
		parts := []string{r.Label}
		for _, c := range r.Cells {
			parts = append(parts, cellText(c.AdjRatio, c.AdjPctImp, c.AdjCV))
		}
		fmt.Fprintln(w, strings.Join(parts, " "))
	}
	cw := 14 // the config column: the longest name
	for _, c := range s.Configs {
		cw = max(cw, len(c))
	}
	if t.hasWaits() {
		fmt.Fprintf(w, "\nMutex waits by class (from the fast path's failure to the acquisition, spinning or asleep; per seed, averaged; max over seeds; us):\n")
		fmt.Fprintf(w, "%-12s %-*s %-6s %10s %10s %10s %10s %10s\n", strings.TrimSuffix(caseHeader(s.Bench), ":"), cw, "config", "class", "waits", "mean", "p90", "p99", "max")
		for _, r := range t.Rows {
			for _, c := range r.Cells {
				for _, wt := range c.Waits {
					fmt.Fprintf(w, "%-12s %-*s %-6s %10d %10.1f %10.1f %10.1f %10.1f\n", r.Label, cw, c.Config, wt.Class, wt.N,
						float64(wt.MeanNs)/1e3, float64(wt.P90Ns)/1e3, float64(wt.P99Ns)/1e3, float64(wt.MaxNs)/1e3)
				}
			}
		}
	}
	fmt.Fprintf(w, "\nCounts per operation (one %s; mean over seeds):\n", opName(s.Bench))
	hdr := fmt.Sprintf("%-12s %-*s", strings.TrimSuffix(caseHeader(s.Bench), ":"), cw, "config")
	for _, k := range PerOpCounts {
		hdr += fmt.Sprintf(" %10s", perOpShort[k])
	}
	fmt.Fprintln(w, hdr)
	for _, r := range t.Rows {
		for _, c := range r.Cells {
			line := fmt.Sprintf("%-12s %-*s", r.Label, cw, c.Config)
			for _, k := range PerOpCounts {
				line += fmt.Sprintf(" %10.4f", c.PerOp[k])
			}
			fmt.Fprintln(w, line)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

func (t *Table) hasWaits() bool {
	for _, r := range t.Rows {
		for _, c := range r.Cells {
			if len(c.Waits) > 0 {
				return true
			}
		}
	}
	return false
}

func (t *Table) missingNote(r Row) string {
	var notes []string
	for _, c := range r.Cells {
		if c.Missing > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d of %d seeds without a figure", c.Config, c.Missing, t.Spec.Seeds))
		}
		if c.Violations > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d invariant violations", c.Config, c.Violations))
		}
	}
	if len(notes) == 0 {
		return ""
	}
	return "   # " + strings.Join(notes, "; ")
}

func rawUnits(m Metric) string {
	switch m.Name {
	case "time":
		return "seconds"
	case "throughput", "rps", "fair_rps":
		return "requests per second"
	}
	return "us"
}

func opName(bench string) string {
	switch bench {
	case "hackbench":
		return "message"
	case "schbench":
		return "request"
	case "inversion":
		return "critical section"
	case "chain":
		return "contended acquisition of m0 by the RT task"
	}
	return "transaction"
}

// fmtSkew prints a skew bound ("10us"; 0: not recorded).
func fmtSkew(ns int64) string {
	if ns <= 0 {
		return "not recorded"
	}
	return time.Duration(ns).String()
}

func fmtVal(v float64) string {
	if math.IsNaN(v) {
		return "--"
	}
	return fmt.Sprintf("%.6g", v)
}

func fmtDur(ns int64) string {
	switch {
	case ns%1e9 == 0:
		return fmt.Sprintf("%ds", ns/1e9)
	case ns%1e6 == 0:
		return fmt.Sprintf("%dms", ns/1e6)
	}
	return fmt.Sprintf("%dns", ns)
}

// String is the cost model in one line.
func (c Cost) String() string {
	return fmt.Sprintf("ns per switch %g, migration %g, IPI %g, lock %g, contended lock %g, juggle retry %g, find_proxy_task step %g",
		c.ContextSwitch, c.Migration, c.IPI, c.LockAcquire, c.LockContended, c.JuggleRetry, c.FPTStep)
}

// WriteCSV prints one line per case and config.
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"bench", "case", "label", "config", "metric", "statistic", "n", "missing", "stat", "cv_pct", "ratio", "pct_imp",
		"adjusted_stat", "adjusted_ratio", "adjusted_pct_imp", "violations", "skew_bound_ns", "inexact"}
	for _, k := range PerOpCounts {
		head = append(head, k+"_per_op")
	}
	_ = cw.Write(head)
	f := func(v float64) string { return fmt.Sprintf("%.6g", v) }
	for _, r := range t.Rows {
		for _, c := range r.Cells {
			rec := []string{t.Spec.Bench, fmt.Sprint(r.Case), r.Label, c.Config, t.Metric.Name, t.Stat, fmt.Sprint(len(c.Values)), fmt.Sprint(c.Missing),
				f(c.Stat), f(c.CV), f(c.Ratio), f(c.PctImp), f(c.AdjStat), f(c.AdjRatio), f(c.AdjPctImp), fmt.Sprint(c.Violations),
				fmt.Sprint(c.SkewBoundNs), fmt.Sprint(c.Inexact)}
			for _, k := range PerOpCounts {
				rec = append(rec, f(c.PerOp[k]))
			}
			_ = cw.Write(rec)
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON prints the table and every result behind it.
func (t *Table) WriteJSON(w io.Writer, results []Result) error {
	rs := append([]Result(nil), results...)
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Case != b.Case {
			return a.Case < b.Case
		}
		if a.Config != b.Config {
			return a.Config < b.Config
		}
		return a.Seed < b.Seed
	})
	out := struct {
		*Table
		Results []Result `json:"results"`
	}{t, rs}
	e := json.NewEncoder(w)
	e.SetIndent("", " ")
	return e.Encode(out)
}

// MarshalJSON writes a statistic that has no value (NaN: no seed gave a
// figure) as null: encoding/json rejects NaN.
func (c Cell) MarshalJSON() ([]byte, error) {
	type plain Cell
	p := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		plain
		Stat      *float64 `json:"stat"`
		CV        *float64 `json:"cv_pct"`
		Ratio     *float64 `json:"ratio"`
		PctImp    *float64 `json:"pct_imp"`
		AdjStat   *float64 `json:"adjusted_stat"`
		AdjCV     *float64 `json:"adjusted_cv_pct"`
		AdjRatio  *float64 `json:"adjusted_ratio"`
		AdjPctImp *float64 `json:"adjusted_pct_imp"`
	}{plain(c), p(c.Stat), p(c.CV), p(c.Ratio), p(c.PctImp), p(c.AdjStat), p(c.AdjCV), p(c.AdjRatio), p(c.AdjPctImp)})
}
