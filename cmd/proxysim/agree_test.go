package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proxysim/proxysim/internal/metrics"
	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/stats"
)

// The text summary, --json and the metrics report the same numbers: the
// same deterministic run three ways. Every per-kind migration figure comes
// from the migration reasons; the proxy line's operations come from the
// counters; p99s are printed as the bounds --json holds; the two
// find_proxy_task histograms measure different things.
func TestSummaryJSONAndMetricsAgree(t *testing.T) {
	args := []string{"run", "--cpus", "8", "--workload", "mixed", "--sim-time", "100ms", "--seed", "11", "--deterministic", "--strategy", "random"}
	code, text, errs := runCLI(t, args...)
	if code != exitOK {
		t.Fatalf("text run: exit %d\n%s", code, errs)
	}
	code, js, errs := runCLI(t, append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("json run: exit %d\n%s", code, errs)
	}
	var s sim.Summary
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatal(err)
	}

	// the run a third time, read by the metrics collector
	o := sim.Defaults()
	o.CPUs, o.Workload, o.SimTime, o.Seed, o.Deterministic, o.Strategy = 8, "mixed", 100*time.Millisecond, 11, true, "random"
	sc, err := sim.LoadScenario(o.Workload, o.CPUs, o.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sim.Build(o, sc)
	if err != nil {
		t.Fatal(err)
	}
	s3 := r.Execute()
	if s3.TraceHash != s.TraceHash {
		t.Fatalf("the third run differs (hash %s, want %s)", s3.TraceHash, s.TraceHash)
	}
	col := metrics.NewCollector(metrics.Options{})
	col.SetSource(r.Machine, metrics.RunInfo{Workload: sc.Name, Seed: o.Seed, ProxyExec: true, Shards: 1, SkewBoundNs: r.Machine.SkewBound()})
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counter := map[string]float64{}
	gauge := map[string]float64{}
	hists := map[string][2]float64{} // count, sum
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += fmt.Sprintf("{%s=%s}", l.GetName(), l.GetValue())
			}
			switch {
			case m.Counter != nil:
				counter[name] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				gauge[name] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				hists[name] = [2]float64{float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()}
			}
		}
	}

	// JSON against metrics
	for k := stats.Counter(0); k < stats.NumCounters; k++ {
		name := metrics.CounterMetricName(k)
		if name == "" {
			continue
		}
		want := float64(s.Counters[stats.CounterNames[k]])
		if metrics.CounterInSeconds(k) {
			want /= 1e9
		}
		if got := counter[name]; got != want {
			t.Errorf("%s = %v, JSON counters[%s] = %v", name, got, stats.CounterNames[k], want)
		}
	}
	var sum uint64
	for reason, n := range s.MigrationsByReason {
		sum += n
		if got := counter["proxysim_migrations_total{reason="+reason+"}"]; got != float64(n) {
			t.Errorf("migrations_total{reason=%s} = %v, JSON %d", reason, got, n)
		}
	}
	if sum != s.Migrations || sum == 0 {
		t.Errorf("migrations %d, sum over reasons %d", s.Migrations, sum)
	}
	// the clocks: the bound and the largest lateness, JSON, metrics, text
	if s.ClockSkewBoundNs <= 0 || gauge["proxysim_clock_skew_bound_seconds"] != float64(s.ClockSkewBoundNs)/1e9 {
		t.Errorf("proxysim_clock_skew_bound_seconds = %v, JSON clock_skew_bound_ns = %d", gauge["proxysim_clock_skew_bound_seconds"], s.ClockSkewBoundNs)
	}
	if gauge["proxysim_ipi_lateness_max_seconds"] != float64(s.MaxIPILatenessNs)/1e9 {
		t.Errorf("proxysim_ipi_lateness_max_seconds = %v, JSON max_ipi_lateness_ns = %d", gauge["proxysim_ipi_lateness_max_seconds"], s.MaxIPILatenessNs)
	}
	if want := sim.FormatSkew(s.ClockSkewBoundNs, s.MaxIPILatenessNs); !strings.Contains(text, "clocks            "+want) {
		t.Errorf("text lacks the clocks line %q\n%s", want, text)
	}
	chain := hists["proxysim_proxy_chain_length"]
	spins := hists["proxysim_find_proxy_task_spins"]
	if chain[0] != float64(s.Counters["find_proxy_task_calls"]) || chain[1] != float64(s.Counters["find_proxy_task_spins"]) {
		t.Errorf("proxy_chain_length count/sum %v, want find_proxy_task calls %d / spins %d", chain, s.Counters["find_proxy_task_calls"], s.Counters["find_proxy_task_spins"])
	}
	resolved := float64(s.Counters["find_proxy_task_calls"] - s.Counters["find_proxy_task_retries"])
	if s.Counters["find_proxy_task_retries"] == 0 || spins[0] > resolved || spins[0] < resolved-float64(o.CPUs) {
		t.Errorf("find_proxy_task_spins count %v, want about the %v resolved picks (retries %d)", spins[0], resolved, s.Counters["find_proxy_task_retries"])
	}
	if spins == chain {
		t.Errorf("find_proxy_task_spins and proxy_chain_length are the same histogram: %v", spins)
	}
	var hist uint64
	for _, n := range s.ChainLength {
		hist += n
	}
	if float64(hist) != chain[0] {
		t.Errorf("JSON chain_length_histogram holds %d calls, metrics %v", hist, chain[0])
	}

	// text against JSON
	mig := regexp.MustCompile(`(?m)^  migrations +(\d+)(?: \((.*)\))?$`).FindStringSubmatch(text)
	if mig == nil || mig[1] != strconv.FormatUint(s.Migrations, 10) {
		t.Fatalf("text migrations line %q, JSON %d\n%s", mig, s.Migrations, text)
	}
	for _, part := range strings.Split(mig[2], ", ") {
		f := strings.Fields(part)
		if len(f) != 2 || f[1] != strconv.FormatUint(s.MigrationsByReason[f[0]], 10) {
			t.Errorf("text migrations %q, JSON %s = %d", part, f[0], s.MigrationsByReason[f[0]])
		}
	}
	c := s.Counters
	wantProxy := fmt.Sprintf("picks %d, proxy_migrate_task calls %d, proxy_needs_return dequeues %d, proxy_activate wake-ups %d,",
		c["proxy_pick_same_rq"], c["proxy_migrations"], c["return_migrations"], c["proxy_activates"])
	if !strings.Contains(text, wantProxy) {
		t.Errorf("text proxy line lacks %q\n%s", wantProxy, text)
	}
	for name, g := range s.Groups {
		row := regexp.MustCompile(`(?m)^    ` + regexp.QuoteMeta(name) + ` .*$`).FindString(text)
		for _, want := range []string{sim.FormatBound(g.P99MutexWaitNs), sim.FormatBound(g.P99WakeupLatencyNs)} {
			if !strings.Contains(row, " "+want+" ") {
				t.Errorf("group %s row %q lacks the p99 bound %s", name, row, want)
			}
		}
	}
	if !strings.Contains(text, "GROUP") || !strings.Contains(text, "WAIT P99") {
		t.Errorf("the groups table has no header row\n%s", text)
	}
}

// p99s print as bounds with three significant digits, rounded up.
func TestFormatBound(t *testing.T) {
	for ns, want := range map[int64]string{0: "0", 999: "<=999ns", 1001: "<=1.01us", 75497471: "<=75.5ms", 67108864: "<=67.2ms", 2_000_000_000: "<=2s", 123_456_789_000: "<=124s"} {
		if got := sim.FormatBound(ns); got != want {
			t.Errorf("FormatBound(%d) = %q, want %q", ns, got, want)
		}
	}
}
