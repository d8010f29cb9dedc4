package ab

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/sim"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

// Statistics against values worked out by hand.
func TestStats(t *testing.T) {
	cases := []struct {
		stat string
		xs   []float64
		want float64
	}{
		{AMean, []float64{1, 2, 3, 4}, 2.5},
		{HMean, []float64{1, 2, 4}, 3 / (1 + 0.5 + 0.25)}, // 1.714285...
		{Median, []float64{3, 1, 2}, 2},
		{Median, []float64{4, 1, 3, 2}, 2.5},
		{AMean, []float64{7}, 7},
	}
	for _, c := range cases {
		if got := Stat(c.stat, c.xs); !near(got, c.want) {
			t.Errorf("%s%v = %v, want %v", c.stat, c.xs, got, c.want)
		}
	}
	if !math.IsNaN(Stat(AMean, nil)) || !math.IsNaN(Stat(HMean, []float64{1, 0})) {
		t.Errorf("no values / HMean with a zero: want NaN")
	}
	// mean 5, squared deviations 32, sample variance 32/7, sd 2.13809
	if got, want := CV([]float64{2, 4, 4, 4, 5, 5, 7, 9}), 100*math.Sqrt(32.0/7)/5; !near(got, want) {
		t.Errorf("CV = %v, want %v (42.76)", got, want)
	}
	if CV([]float64{3}) != 0 {
		t.Errorf("CV of one value: want 0")
	}
	if s, ok := ParseStat("hmean"); !ok || s != HMean {
		t.Errorf("ParseStat(hmean) = %q %v", s, ok)
	}
	if _, ok := ParseStat("mode"); ok {
		t.Errorf("ParseStat(mode) accepted")
	}
}

// The reports' cells: hackbench (lower is better) 1.03 [ -2.88], tbench
// (higher is better) 0.99 [ -1.30], baselines 1.00 [ -0.00] / [  0.00].
func TestCompareAndCellText(t *testing.T) {
	r, imp := Compare(1.0288, 1, false)
	if got := cellText(r, imp, 2.71); got != "1.03 [ -2.88]( 2.71)" {
		t.Errorf("lower is better: %q", got)
	}
	r, imp = Compare(0.987, 1, true)
	if got := cellText(r, imp, 0.66); got != "0.99 [ -1.30]( 0.66)" {
		t.Errorf("higher is better: %q", got)
	}
	r, imp = Compare(2, 2, false)
	if got := cellText(r, imp, 1.8); got != "1.00 [ -0.00]( 1.80)" {
		t.Errorf("baseline, lower is better: %q", got)
	}
	r, imp = Compare(2, 2, true)
	if got := cellText(r, imp, 54.18); got != "1.00 [  0.00](54.18)" {
		t.Errorf("baseline, higher is better: %q", got)
	}
	r, imp = Compare(0, 0, false) // both zero (a p99 wake-up latency of 0): equal
	if got := cellText(r, imp, 0); got != "1.00 [ -0.00]( 0.00)" {
		t.Errorf("0 vs 0: %q", got)
	}
	r, imp = Compare(0.5, 1, false) // half the time: 50% better
	if r != 0.5 || imp != 50 {
		t.Errorf("Compare(0.5, 1, lower) = %v %v, want 0.5 50", r, imp)
	}
	if got := cellText(math.NaN(), math.NaN(), 0); !strings.Contains(got, "--") {
		t.Errorf("no value: %q", got)
	}
}

func res(c int, cfg string, seed uint64, timeNs int64, requests uint64, counts map[string]uint64) Result {
	return Result{Case: c, Config: cfg, Seed: seed, CPUs: 4, SimTimeNs: timeNs,
		Bench:  sim.BenchFigures{Bench: "hackbench", Kind: "finish", Finished: true, TimeNs: timeNs, Requests: requests},
		Counts: counts}
}

func testFile() *File {
	f := &File{Version: FileVersion, Spec: Spec{Workload: "hackbench", Bench: "hackbench", Primary: "groups", CPUs: 4,
		Topology: "t", SimTimeNs: 1e9, Strategy: "time", Cases: []int{1, 2}, Configs: []string{"off", "full"}, Seeds: 3, FirstSeed: 10}}
	pm := map[string]uint64{"proxy_migrations": 30, "context_switches": 300}
	f.Results = []Result{
		// case 1: off 1,2,3 ms (AMean 2ms); full 2,3,4 ms (AMean 3ms: 1.50 [-50.00])
		res(1, "off", 10, 1e6, 100, nil), res(1, "off", 11, 2e6, 100, nil), res(1, "off", 12, 3e6, 100, nil),
		res(1, "full", 10, 2e6, 100, pm), res(1, "full", 11, 3e6, 100, pm), res(1, "full", 12, 4e6, 100, pm),
		// case 2: off 4,4 ms and seed 12 missing; full 2,2,2 ms: 0.50 [ 50.00]
		res(2, "off", 10, 4e6, 200, nil), res(2, "off", 11, 4e6, 200, nil),
		res(2, "full", 10, 2e6, 200, nil), res(2, "full", 11, 2e6, 200, nil), res(2, "full", 12, 2e6, 200, nil),
		// another seed range and an unfinished run: ignored / missing
		res(1, "off", 99, 9e9, 1, nil),
	}
	return f
}

// A table computed from a hand-made file, checked cell by cell.
func TestBuildTable(t *testing.T) {
	f := testFile()
	m, _ := FindMetric("hackbench", "")
	tb := Build(f, m, AMean, Cost{})
	if len(tb.Rows) != 2 || len(tb.Rows[0].Cells) != 2 {
		t.Fatalf("rows %+v", tb.Rows)
	}
	off, full := tb.Rows[0].Cells[0], tb.Rows[0].Cells[1]
	if !near(off.Stat, 0.002) || !near(full.Stat, 0.003) {
		t.Errorf("case 1 AMeans %v %v, want 0.002 0.003", off.Stat, full.Stat)
	}
	if !near(off.CV, 50) { // sd 1ms over mean 2ms
		t.Errorf("case 1 off CV %v, want 50", off.CV)
	}
	if !near(full.Ratio, 1.5) || !near(full.PctImp, -50) {
		t.Errorf("case 1 full %v [%v], want 1.50 [-50]", full.Ratio, full.PctImp)
	}
	if !near(full.PerOp["proxy_migrations"], 0.3) || !near(full.PerOp["context_switches"], 3) {
		t.Errorf("per op %v, want proxy_migrations 0.3, context_switches 3", full.PerOp)
	}
	c2 := tb.Rows[1].Cells
	if c2[0].Missing != 1 || len(c2[0].Values) != 2 || !near(c2[1].PctImp, 50) || c2[1].CV != 0 {
		t.Errorf("case 2 %+v", c2)
	}
	var buf bytes.Buffer
	if err := tb.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Test : hackbench", "Units : Normalized time in seconds", "Interpretation: Lower is better", "Statistic : AMean",
		"Case: off[pct imp](CV) full[pct imp](CV)\n",
		"1-groups 1.00 [ -0.00](50.00) 1.50 [-50.00](33.33)\n",
		"2-groups 1.00 [ -0.00]( 0.00) 0.50 [ 50.00]( 0.00)   # off: 1 of 3 seeds without a figure\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	buf.Reset()
	if err := tb.WriteJSON(&buf, f.Results); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Rows []struct {
			Cells []struct {
				Values []float64 `json:"values"`
				Seeds  []uint64  `json:"seeds"`
			} `json:"cells"`
		} `json:"rows"`
		Results []Result `json:"results"`
	}
	if err := json.Unmarshal(buf.Bytes(), &js); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if v := js.Rows[0].Cells[1].Values; len(v) != 3 || !near(v[2], 0.004) || js.Rows[0].Cells[1].Seeds[2] != 12 {
		t.Errorf("json per-seed values %v", js.Rows[0].Cells[1])
	}
	if len(js.Results) != len(f.Results) {
		t.Errorf("json results %d, want %d", len(js.Results), len(f.Results))
	}
	buf.Reset()
	if err := tb.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(buf.String()), "\n"); len(lines) != 5 || !strings.HasPrefix(lines[2], "hackbench,1,1-groups,full,time,AMean,3,0,0.003,33.3333,1.5,-50,") {
		t.Errorf("csv:\n%s", buf.String())
	}
}

// The cost model by hand: 300 switches x 10 ns + 30 IPIs x 100 ns = 6 us
// of overhead over 4 CPUs is 1.5 us more time to finish.
func TestCostModel(t *testing.T) {
	c := Cost{ContextSwitch: 10, IPI: 100}
	r := res(1, "full", 1, 1e6, 100, map[string]uint64{"context_switches": 300, "ipis": 30})
	if got := c.Overhead(r.Counts); got != 6000 {
		t.Errorf("overhead %v, want 6000", got)
	}
	m, _ := FindMetric("hackbench", "time")
	if got := c.Adjust(m, 0.001, &r); !near(got, 0.001+1.5e-6) {
		t.Errorf("adjusted time %v, want 0.0010015", got)
	}
	// throughput: 100 requests over 1ms + 1.5us
	tp, _ := FindMetric("tbench", "")
	if got := c.Adjust(tp, 1e5, &r); !near(got, 100/(1.0015e-3)) {
		t.Errorf("adjusted throughput %v", got)
	}
	// a latency in us grows by the mean overhead per request: 60 ns
	lat, _ := FindMetric("schbench", "wakeup_p99")
	if got := c.Adjust(lat, 10, &r); !near(got, 10.06) {
		t.Errorf("adjusted latency %v, want 10.06", got)
	}
}

func TestPerfParsing(t *testing.T) {
	pipe := "# Running 'sched/pipe' benchmark:\n# Executed 100000 pipe operations between two processes\n\n     Total time: 0.729 [sec]\n\n       7.290940 usecs/op\n         137156 ops/sec\n"
	if v, err := ParsePerfPipe(pipe); err != nil || !near(v, 7.29094) {
		t.Errorf("pipe: %v %v", v, err)
	}
	msg := "# 20 sender and receiver processes per group\n# 4 groups == 160 processes run\n\n     Total time: 0.700 [sec]\n"
	if v, err := ParsePerfMessaging(msg); err != nil || !near(v, 0.7) {
		t.Errorf("messaging: %v %v", v, err)
	}
	if _, err := ParsePerfPipe("garbage"); err == nil {
		t.Errorf("garbage parsed")
	}
	// 7.29 us round trip: 3645 ns a switch less 1400 charged = 2245;
	// 0.7 s over 160000 messages = 4375 ns less 1600 = 2775; mean 2510
	if c := Calibrate(7.29, 0.7, 4, 100); !near(c.ContextSwitch, 2510) || !near(c.Migration, 2510/500.0*2000) {
		t.Errorf("calibrated %+v", c)
	}
}

func TestSpecJobsAndSame(t *testing.T) {
	f := testFile()
	if n := len(f.Spec.Jobs()); n != 2*2*3 {
		t.Errorf("jobs %d, want 12", n)
	}
	o := f.Spec
	o.Cases, o.Seeds = []int{8}, 9
	if !f.Spec.Same(o) {
		t.Errorf("cases and seeds must not make another matrix")
	}
	o.CPUs = 8
	if f.Spec.Same(o) {
		t.Errorf("other CPUs must make another matrix")
	}
	if d := f.Done(); d[Job{1, "full", 12}] == nil || d[Job{2, "off", 12}] != nil {
		t.Errorf("Done index wrong")
	}
}

// Results made with optimistic spinning on are not resumed into a matrix
// run with it off, and the other way round.
func TestSpecSameMindsOptimisticSpin(t *testing.T) {
	a := Spec{Workload: "hackbench", CPUs: 32, SimTimeNs: 1e9, Strategy: "time"}
	b := a
	b.NoOptimisticSpin = true
	if a.Same(b) || b.Same(a) {
		t.Fatal("specs with and without optimistic spinning compare as the same")
	}
	if !b.Same(b) {
		t.Fatal("a spec is not the same as itself")
	}
}

// The inversion benchmark's table: the RT wait p99 is the metric, each
// class's waits are averaged over the seeds (max: the largest), and the
// text prints them per class.
func TestInversionWaits(t *testing.T) {
	f := &File{Version: FileVersion, Spec: Spec{Workload: "inversion", Bench: "inversion", Primary: "hogs", CPUs: 4,
		Topology: "t", SimTimeNs: 1e9, Strategy: "time", Cases: []int{8}, Configs: []string{"off", "full"}, Seeds: 2, FirstSeed: 1}}
	r := func(cfg string, seed uint64, rtP99, rtMax int64) Result {
		return Result{Case: 8, Config: cfg, Seed: seed, CPUs: 4, SimTimeNs: 1e9, Counts: map[string]uint64{},
			Bench: sim.BenchFigures{Bench: "inversion", Kind: "inversion", Requests: 100, RequestsPerSec: 100,
				Waits: []sim.ClassWaits{{Class: "rt", N: 10, MeanNs: 1000, P90Ns: 2000, P99Ns: rtP99, MaxNs: rtMax}, {Class: "fair", N: 4, MeanNs: 500, P99Ns: 900, MaxNs: 900}}}}
	}
	f.Results = []Result{r("off", 1, 4000, 5000), r("off", 2, 6000, 7000), r("full", 1, 100, 150), r("full", 2, 300, 350)}
	m, err := FindMetric("inversion", "")
	if err != nil || m.Name != "rt_wait_p99" || m.HigherBetter {
		t.Fatalf("metric %+v %v: want rt_wait_p99, lower is better", m, err)
	}
	tb := Build(f, m, AMean, Cost{})
	off, full := tb.Rows[0].Cells[0], tb.Rows[0].Cells[1]
	if !near(off.Stat, 5) || !near(full.Stat, 0.2) || !near(full.Ratio, 0.04) {
		t.Errorf("RT p99 AMeans %v us, %v us, ratio %v: want 5, 0.2, 0.04", off.Stat, full.Stat, full.Ratio)
	}
	if len(full.Waits) != 2 || full.Waits[0] != (sim.ClassWaits{Class: "rt", N: 10, MeanNs: 1000, P90Ns: 2000, P99Ns: 200, MaxNs: 350}) {
		t.Errorf("full's waits %+v: want rt 10 waits, mean 1000, p90 2000, p99 200 (the seeds' mean), max 350", full.Waits)
	}
	var buf bytes.Buffer
	if err := tb.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#hogs: off[pct imp](CV) full[pct imp](CV)", "8 1.00 [ -0.00](28.28) 0.04 [ 96.00](70.71)",
		"8            full           rt             10        1.0        2.0        0.2        0.3"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, buf.String())
		}
	}
}

// A matrix run with other proxy costs is another matrix.
func TestSpecSameMindsProxyCosts(t *testing.T) {
	a := Spec{Workload: "hackbench", CPUs: 32, SimTimeNs: 1e9, Strategy: "time", ProxyCosts: sim.DefaultProxyCosts}
	b := a
	b.ProxyCosts.Migrate++
	if a.Same(b) {
		t.Fatal("specs with other proxy costs compare as the same")
	}
}

// A result measured with a larger clock skew bound than the matrix asks
// for (one of a results file written before the bound existed: 0) is
// flagged in the table, and the table says the bound.
func TestSkewBoundFlagsInexactResults(t *testing.T) {
	m, err := FindMetric("chain", "")
	if err != nil || m.Name != "wait_mean" || !m.NoCost {
		t.Fatalf("chain's default metric %+v, %v: want wait_mean, outside the cost model", m, err)
	}
	fig := func(meanUs int64) sim.BenchFigures {
		return sim.BenchFigures{Bench: "chain", Kind: "chain", Requests: 10, Chain: &sim.ChainFigures{Waits: 10, MeanWaitNs: meanUs * 1000}}
	}
	f := &File{Version: FileVersion, Spec: Spec{Bench: "chain", Cases: []int{7}, Configs: []string{"off", "full"}, Seeds: 2, FirstSeed: 1, MaxSkewNs: 10_000},
		Results: []Result{
			{Case: 7, Config: "off", Seed: 1, Bench: fig(800), SkewBoundNs: 10_000},
			{Case: 7, Config: "off", Seed: 2, Bench: fig(900), SkewBoundNs: 10_000},
			{Case: 7, Config: "full", Seed: 1, Bench: fig(100), SkewBoundNs: 10_000},
			{Case: 7, Config: "full", Seed: 2, Bench: fig(120)}, // an old file's: an epoch's skew
		}}
	tb := Build(f, m, m.Stat, DefaultCost())
	off, full := tb.Rows[0].Cells[0], tb.Rows[0].Cells[1]
	if off.Inexact || off.SkewBoundNs != 10_000 || !full.Inexact || full.SkewBoundNs != OldSkewBoundNs {
		t.Fatalf("off: inexact %v bound %d; full: inexact %v bound %d; want only full flagged, with the old epoch bound", off.Inexact, off.SkewBoundNs, full.Inexact, full.SkewBoundNs)
	}
	if !near(off.Stat, 850) || !near(full.AdjStat, full.Stat) {
		t.Errorf("off mean %v (want 850 us); full adjusted %v, raw %v: the cost model must leave the chain's waits alone", off.Stat, full.AdjStat, full.Stat)
	}
	var b bytes.Buffer
	if err := tb.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "Clocks : skew bound 10µs") || !strings.Contains(out, "(12.86)*") || !strings.Contains(out, "* measured with a larger clock skew bound than 10µs") {
		t.Errorf("the table does not say the bound or flag the inexact cell:\n%s", out)
	}
	f.Results[3].SkewBoundNs = 10_000
	if c := Build(f, m, m.Stat, DefaultCost()).Rows[0].Cells[1]; c.Inexact {
		t.Errorf("a cell measured with the bound asked for is flagged")
	}
}
