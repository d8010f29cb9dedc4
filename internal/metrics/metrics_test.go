package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/cpu"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/trace"
)

// The running machine is a Source.
var _ Source = (*cpu.Machine)(nil)

// fakeSource is a Source over counter blocks the test writes directly.
type fakeSource struct {
	cpus   []*stats.CPU
	locks  []*spinlock.CPU
	events atomic.Uint64
	nr     []atomic.Int64

	mu   sync.Mutex
	viol map[check.Invariant]uint64
}

func newFake(n int) *fakeSource {
	f := &fakeSource{nr: make([]atomic.Int64, n), viol: map[check.Invariant]uint64{}}
	for i := 0; i < n; i++ {
		f.cpus = append(f.cpus, &stats.CPU{})
		f.locks = append(f.locks, spinlock.NewCPU(i))
	}
	return f
}

func (f *fakeSource) CPUStats() []*stats.CPU     { return f.cpus }
func (f *fakeSource) LockStats() []*spinlock.CPU { return f.locks }
func (f *fakeSource) EventCount() uint64         { return f.events.Load() }

func (f *fakeSource) NrRunning() []int {
	out := make([]int, len(f.nr))
	for i := range f.nr {
		out[i] = int(f.nr[i].Load())
	}
	return out
}

func (f *fakeSource) ViolationCounts() map[check.Invariant]uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[check.Invariant]uint64, len(f.viol))
	for k, v := range f.viol {
		out[k] = v
	}
	return out
}

func (f *fakeSource) violate(inv check.Invariant) {
	f.mu.Lock()
	f.viol[inv]++
	f.mu.Unlock()
}

// fixed returns a two-CPU source with known values.
func fixed() *fakeSource {
	f := newFake(2)
	c0, c1 := f.cpus[0], f.cpus[1]
	c0.Add(stats.ContextSwitches, 10)
	c1.Add(stats.ContextSwitches, 5)
	c0.Add(stats.ProxyPickSameRQ, 3)
	c1.Add(stats.ProxyPickSameRQ, 4)
	c0.Add(stats.FindProxyTaskSpins, 9)
	c0.Add(stats.MutexContentions, 4)
	c1.Add(stats.MutexContentions, 2)
	c1.Add(stats.MutexWaitsDone, 4)
	c0.Add(stats.ProxyMigrations, 1)
	c0.MigrateBy[trace.ReasonLoadBalance].Add(2)
	c0.MigrateBy[trace.ReasonProxy].Add(1)
	c1.MigrateBy[trace.ReasonReturn].Add(1)
	c1.MigrateBy[trace.ReasonWake].Add(3)
	c0.Add(stats.Migrations, 3)
	c1.Add(stats.Migrations, 4)
	c0.SimTime.Store(1_500_000_000)
	c1.SimTime.Store(2_250_000_000)
	for _, v := range []uint64{1, 1, 1, 2} {
		c0.Observe(stats.HistChainLength, v)
	}
	c1.Observe(stats.HistChainLength, 5)
	c1.Observe(stats.HistChainLength, 5000) // open last bucket
	c0.Observe(stats.HistFPTSpins, 0)
	c0.Observe(stats.HistFPTSpins, 0)
	c1.Observe(stats.HistFPTSpins, 3)

	l0, l1 := f.locks[0], f.locks[1]
	l0.SpinHist[0].Add(10) // first try
	l0.SpinHist[1].Add(2)  // 1 spin each
	l0.SpinHist[3].Add(1)  // 5 spins
	l0.Spins.Add(2*1 + 5)
	l1.SpinHist[0].Add(5)
	l1.SpinHist[spinlock.SpinBuckets-1].Add(1) // 200 spins: open last bucket
	l1.Spins.Add(200)
	l0.Acquisitions.Add(13)
	l1.Acquisitions.Add(6)
	l0.Contended.Add(3)
	l1.Contended.Add(1)

	f.events.Store(12345)
	f.nr[0].Store(2)
	f.nr[1].Store(3)
	f.violate(check.InvChainAcyclic)
	f.violate(check.InvChainAcyclic)
	return f
}

var fixedInfo = RunInfo{Workload: "inversion", Seed: 42, ProxyExec: true, Shard: 1, Shards: 4, SkewBoundNs: 10_000}

func newTestRegistry(t testing.TB, o Options, src Source) (*Collector, *prometheus.Registry) {
	t.Helper()
	c := NewCollector(o)
	if src != nil {
		c.SetSource(src, fixedInfo)
	}
	return c, NewRegistry(c)
}

const goldenFixed = `
# HELP proxysim_context_switches_total Context switches (the schedule() path switching to another task), as in /proc/schedstat.
# TYPE proxysim_context_switches_total counter
proxysim_context_switches_total 15
# HELP proxysim_proxy_picks_total Picks that ran a lock owner on behalf of a blocked donor queued on the same runqueue (proxy execution).
# TYPE proxysim_proxy_picks_total counter
proxysim_proxy_picks_total 7
# HELP proxysim_find_proxy_task_spins_total Steps along blocked_on chains taken by find_proxy_task, summed over calls (the sum of proxysim_proxy_chain_length).
# TYPE proxysim_find_proxy_task_spins_total counter
proxysim_find_proxy_task_spins_total 9
# HELP proxysim_ipis_total Inter-processor interrupts sent (reschedule and wake-list IPIs).
# TYPE proxysim_ipis_total counter
proxysim_ipis_total 0
# HELP proxysim_sim_time_seconds_total Simulated (virtual) time elapsed: the furthest CPU clock, in seconds.
# TYPE proxysim_sim_time_seconds_total counter
proxysim_sim_time_seconds_total 2.25
# HELP proxysim_events_total Events recorded by the flight recorder.
# TYPE proxysim_events_total counter
proxysim_events_total 12345
# HELP proxysim_runnable_tasks Runnable tasks: the sum of every CPU's nr_running.
# TYPE proxysim_runnable_tasks gauge
proxysim_runnable_tasks 5
# HELP proxysim_blocked_tasks Tasks waiting on a kernel mutex: contentions minus waits that ended, floored at 0.
# TYPE proxysim_blocked_tasks gauge
proxysim_blocked_tasks 2
# HELP proxysim_spinlock_contentions_total Raw spinlock acquisitions whose first try failed.
# TYPE proxysim_spinlock_contentions_total counter
proxysim_spinlock_contentions_total 4
# HELP proxysim_proxy_chain_length blocked_on chain links walked per find_proxy_task call.
# TYPE proxysim_proxy_chain_length histogram
proxysim_proxy_chain_length_bucket{le="0"} 0
proxysim_proxy_chain_length_bucket{le="1"} 3
proxysim_proxy_chain_length_bucket{le="3"} 4
proxysim_proxy_chain_length_bucket{le="7"} 5
proxysim_proxy_chain_length_bucket{le="15"} 5
proxysim_proxy_chain_length_bucket{le="31"} 5
proxysim_proxy_chain_length_bucket{le="63"} 5
proxysim_proxy_chain_length_bucket{le="127"} 5
proxysim_proxy_chain_length_bucket{le="255"} 5
proxysim_proxy_chain_length_bucket{le="511"} 5
proxysim_proxy_chain_length_bucket{le="1023"} 5
proxysim_proxy_chain_length_bucket{le="+Inf"} 6
proxysim_proxy_chain_length_sum 5010
proxysim_proxy_chain_length_count 6
# HELP proxysim_find_proxy_task_spins Spins per resolved proxy pick: the blocked_on links walked by every find_proxy_task call of the pick, plus one per call that forced a re-pick.
# TYPE proxysim_find_proxy_task_spins histogram
proxysim_find_proxy_task_spins_bucket{le="0"} 2
proxysim_find_proxy_task_spins_bucket{le="1"} 2
proxysim_find_proxy_task_spins_bucket{le="3"} 3
proxysim_find_proxy_task_spins_bucket{le="7"} 3
proxysim_find_proxy_task_spins_bucket{le="15"} 3
proxysim_find_proxy_task_spins_bucket{le="31"} 3
proxysim_find_proxy_task_spins_bucket{le="63"} 3
proxysim_find_proxy_task_spins_bucket{le="127"} 3
proxysim_find_proxy_task_spins_bucket{le="255"} 3
proxysim_find_proxy_task_spins_bucket{le="511"} 3
proxysim_find_proxy_task_spins_bucket{le="1023"} 3
proxysim_find_proxy_task_spins_bucket{le="+Inf"} 3
proxysim_find_proxy_task_spins_sum 3
proxysim_find_proxy_task_spins_count 3
# HELP proxysim_spinlock_spins_per_acquisition Failed tries per contended-path raw spinlock acquisition (0 when the first try succeeded).
# TYPE proxysim_spinlock_spins_per_acquisition histogram
proxysim_spinlock_spins_per_acquisition_bucket{le="0"} 15
proxysim_spinlock_spins_per_acquisition_bucket{le="1"} 17
proxysim_spinlock_spins_per_acquisition_bucket{le="3"} 17
proxysim_spinlock_spins_per_acquisition_bucket{le="7"} 18
proxysim_spinlock_spins_per_acquisition_bucket{le="15"} 18
proxysim_spinlock_spins_per_acquisition_bucket{le="31"} 18
proxysim_spinlock_spins_per_acquisition_bucket{le="63"} 18
proxysim_spinlock_spins_per_acquisition_bucket{le="+Inf"} 19
proxysim_spinlock_spins_per_acquisition_sum 207
proxysim_spinlock_spins_per_acquisition_count 19
# HELP proxysim_run_info Information about the run; the value is always 1.
# TYPE proxysim_run_info gauge
proxysim_run_info{proxy_exec="true",seed="42",shard="1",workload="inversion"} 1
# HELP proxysim_shards Number of shards of the run this process belongs to.
# TYPE proxysim_shards gauge
proxysim_shards 4
# HELP proxysim_clock_skew_bound_seconds The run's clock skew bound (--max-skew, at most --epoch), virtual seconds: a latency between events on two CPUs is exact to this, plus one step, per cross-CPU event it spans.
# TYPE proxysim_clock_skew_bound_seconds gauge
proxysim_clock_skew_bound_seconds 1e-05
`

func TestGolden(t *testing.T) {
	_, reg := newTestRegistry(t, Options{}, fixed())
	names := []string{
		"proxysim_context_switches_total", "proxysim_proxy_picks_total", "proxysim_find_proxy_task_spins_total",
		"proxysim_ipis_total", "proxysim_sim_time_seconds_total", "proxysim_events_total",
		"proxysim_runnable_tasks", "proxysim_blocked_tasks", "proxysim_spinlock_contentions_total",
		"proxysim_proxy_chain_length", "proxysim_find_proxy_task_spins", "proxysim_spinlock_spins_per_acquisition",
		"proxysim_run_info", "proxysim_shards", "proxysim_clock_skew_bound_seconds",
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(goldenFixed), names...); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenLabelled checks the families with one series per migration
// reason and per invariant; the expected text is written line by line from
// the reason and invariant tables so that a new reason or invariant needs
// no edit here.
func TestGoldenLabelled(t *testing.T) {
	_, reg := newTestRegistry(t, Options{}, fixed())
	var b strings.Builder
	b.WriteString("# HELP proxysim_migrations_total Task CPU changes (sched_migrate_task), by reason.\n")
	b.WriteString("# TYPE proxysim_migrations_total counter\n")
	byReason := map[trace.MigrateReason]int{trace.ReasonLoadBalance: 2, trace.ReasonProxy: 1, trace.ReasonReturn: 1, trace.ReasonWake: 3}
	for r := trace.MigrateReason(0); r < trace.NumReasons; r++ {
		fmt.Fprintf(&b, "proxysim_migrations_total{reason=%q} %d\n", r.String(), byReason[r])
	}
	b.WriteString("# HELP proxysim_invariant_violations_total Invariant violations detected, by invariant (0 for every invariant not violated).\n")
	b.WriteString("# TYPE proxysim_invariant_violations_total counter\n")
	for _, inv := range check.AllInvariants() {
		n := 0
		if inv == check.InvChainAcyclic {
			n = 2
		}
		fmt.Fprintf(&b, "proxysim_invariant_violations_total{invariant=%q} %d\n", inv.Name(), n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(b.String()),
		"proxysim_migrations_total", "proxysim_invariant_violations_total"); err != nil {
		t.Fatal(err)
	}
	// The reasons add up to the migrations counter, which is why that
	// counter has no family of its own.
	sum := 0
	for _, n := range byReason {
		sum += n
	}
	if m := stats.Sum(fixed().cpus, stats.Migrations); uint64(sum) != m {
		t.Fatalf("fixture: migrations counter %d, reasons add up to %d", m, sum)
	}
}

func TestCounterNames(t *testing.T) {
	seen := map[string]stats.Counter{}
	for k := stats.Counter(0); k < stats.NumCounters; k++ {
		n := stats.CounterNames[k]
		if counterHelp[n] == "" {
			t.Errorf("counter %s has no help text: add it to counterHelp in internal/metrics/metrics.go", n)
		}
		name := CounterMetricName(k)
		if name == "" {
			if _, ok := counterSkip[n]; !ok {
				t.Errorf("counter %s has no metric", n)
			}
			continue
		}
		if !strings.HasPrefix(name, "proxysim_") || !strings.HasSuffix(name, "_total") {
			t.Errorf("counter %s: bad metric name %s", n, name)
		}
		if o, dup := seen[name]; dup {
			t.Errorf("counters %s and %s share metric %s", stats.CounterNames[o], n, name)
		}
		seen[name] = k
	}
	if got := CounterMetricName(stats.ProxyPickSameRQ); got != "proxysim_proxy_picks_total" {
		t.Errorf("proxy_pick_same_rq -> %s", got)
	}
	for _, want := range []string{
		"proxysim_context_switches_total", "proxysim_wakeups_total", "proxysim_proxy_migrations_total",
		"proxysim_return_migrations_total", "proxysim_proxy_activates_total",
		"proxysim_sleeping_owner_enqueues_total", "proxysim_blocked_waiter_activations_total",
		"proxysim_donor_handoffs_total", "proxysim_find_proxy_task_calls_total",
		"proxysim_find_proxy_task_retries_total", "proxysim_find_proxy_task_spins_total",
		"proxysim_proxy_resched_idle_total", "proxysim_lock_juggling_retries_total",
		"proxysim_mutex_contentions_total", "proxysim_mutex_acquires_total", "proxysim_ticks_total", "proxysim_ipis_total",
	} {
		if _, ok := seen[want]; !ok {
			t.Errorf("no counter exported as %s", want)
		}
	}
}

func TestLint(t *testing.T) {
	_, reg := newTestRegistry(t, Options{PerCPU: true}, fixed())
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func familyNames(t *testing.T, g prometheus.Gatherer) map[string]bool {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "proxysim_") {
			out[mf.GetName()] = true
		}
	}
	return out
}

func TestPerCPU(t *testing.T) {
	src := fixed()
	_, plain := newTestRegistry(t, Options{}, src)
	_, per := newTestRegistry(t, Options{PerCPU: true}, src)
	a, b := familyNames(t, plain), familyNames(t, per)
	for n := range a {
		if !b[n] {
			t.Errorf("PerCPU lost %s", n)
		}
	}
	var added []string
	for n := range b {
		if !a[n] {
			added = append(added, n)
		}
	}
	sort.Strings(added)
	want := []string{
		"proxysim_cpu_context_switches_total", "proxysim_cpu_migrations_total", "proxysim_cpu_nr_running",
		"proxysim_cpu_proxy_migrations_total", "proxysim_cpu_sim_time_seconds",
	}
	if !slices.Equal(added, want) {
		t.Fatalf("PerCPU added %v, want %v", added, want)
	}
	mfs, err := per.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		n := mf.GetName()
		if strings.HasPrefix(n, "proxysim_cpu_") {
			if len(mf.GetMetric()) != 2 {
				t.Errorf("%s: %d series, want one per CPU", n, len(mf.GetMetric()))
			}
			for _, m := range mf.GetMetric() {
				if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "cpu" {
					t.Errorf("%s: labels %v, want only cpu", n, m.GetLabel())
				}
			}
			if mf.GetType().String() == "HISTOGRAM" || mf.GetType().String() == "SUMMARY" {
				t.Errorf("%s: per-CPU histogram", n)
			}
			continue
		}
		if strings.HasPrefix(n, "proxysim_") {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "cpu" {
						t.Errorf("%s has a cpu label without being a proxysim_cpu_ family", n)
					}
				}
			}
		}
	}
	const perCPUText = `
# HELP proxysim_cpu_sim_time_seconds One CPU's virtual clock, in seconds.
# TYPE proxysim_cpu_sim_time_seconds gauge
proxysim_cpu_sim_time_seconds{cpu="0"} 1.5
proxysim_cpu_sim_time_seconds{cpu="1"} 2.25
# HELP proxysim_cpu_nr_running One CPU's nr_running.
# TYPE proxysim_cpu_nr_running gauge
proxysim_cpu_nr_running{cpu="0"} 2
proxysim_cpu_nr_running{cpu="1"} 3
# HELP proxysim_cpu_migrations_total Task CPU changes counted by one CPU.
# TYPE proxysim_cpu_migrations_total counter
proxysim_cpu_migrations_total{cpu="0"} 3
proxysim_cpu_migrations_total{cpu="1"} 4
`
	if err := testutil.GatherAndCompare(per, strings.NewReader(perCPUText),
		"proxysim_cpu_sim_time_seconds", "proxysim_cpu_nr_running", "proxysim_cpu_migrations_total"); err != nil {
		t.Fatal(err)
	}
}

func TestNoSource(t *testing.T) {
	c := NewCollector(Options{PerCPU: true})
	if n := testutil.CollectAndCount(c); n != 0 {
		t.Fatalf("no SetSource: %d series, want 0", n)
	}
	c.SetSource(nil, fixedInfo)
	names := familyNames(t, NewRegistry(c))
	if len(names) != 2 || !names["proxysim_run_info"] || !names["proxysim_shards"] {
		t.Fatalf("nil source: families %v, want only proxysim_run_info and proxysim_shards", names)
	}
	c.SetSource(fixed(), fixedInfo)
	if n := testutil.CollectAndCount(c, "proxysim_invariant_violations_total"); n != len(check.AllInvariants()) {
		t.Fatalf("invariant series %d, want %d", n, len(check.AllInvariants()))
	}
}

func TestResolveAddr(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{in: "", err: true},
		{in: "   ", err: true},
		{in: "9464", want: "127.0.0.1:9464"},
		{in: ":9464", want: "127.0.0.1:9464"},
		{in: " :9464 ", want: "127.0.0.1:9464"},
		{in: "0", want: "127.0.0.1:0"},
		{in: ":0", want: "127.0.0.1:0"},
		{in: "127.0.0.1:9464", want: "127.0.0.1:9464"},
		{in: "0.0.0.0:9464", want: "0.0.0.0:9464"},
		{in: "localhost:1234", want: "localhost:1234"},
		{in: "[::1]:9464", want: "[::1]:9464"},
		{in: "[::]:9464", want: "[::]:9464"},
		{in: "::1", want: "[::1]:9464"},
		{in: "[::1]", want: "[::1]:9464"},
		{in: "localhost", want: "localhost:9464"},
		{in: "0.0.0.0", want: "0.0.0.0:9464"},
		{in: "65535", want: "127.0.0.1:65535"},
		{in: "65536", err: true},
		{in: ":70000", err: true},
		{in: ":http", err: true},
		{in: ":-1", err: true},
		{in: "host:", err: true},
		{in: "a:b:c", err: true},
		{in: "http://127.0.0.1:9464/metrics", err: true},
		{in: "127.0.0.1:9464\nx", err: true},
	} {
		got, err := ResolveAddr(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("ResolveAddr(%q) = %q, want an error", tc.in, got)
			} else if strings.ContainsAny(err.Error(), "\r\n") {
				t.Errorf("ResolveAddr(%q): error is not one line: %q", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ResolveAddr(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func get(t *testing.T, url string, accept string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestServe(t *testing.T) {
	_, reg := newTestRegistry(t, Options{}, fixed())
	bound, shutdown, err := Serve("127.0.0.1:0", reg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(bound, "127.0.0.1:") || strings.HasSuffix(bound, ":0") {
		t.Fatalf("bound %q", bound)
	}
	base := "http://" + bound
	resp, body := get(t, base+"/metrics", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `proxysim_run_info{proxy_exec="true",seed="42",shard="1",workload="inversion"} 1`) {
		t.Fatalf("/metrics: %s\n%.400s", resp.Status, body)
	}
	for _, want := range []string{"go_goroutines", "process_cpu_seconds_total", "go_build_info", "promhttp_metric_handler_requests_total"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	resp, body = get(t, base+"/metrics", "application/openmetrics-text;version=1.0.0")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") || !strings.HasSuffix(body, "# EOF\n") {
		t.Errorf("OpenMetrics: Content-Type %q, body ends %q", ct, body[max(0, len(body)-20):])
	}
	resp, body = get(t, base+"/", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `href="/metrics"`) {
		t.Errorf("/: %s %q", resp.Status, body)
	}
	if resp, _ = get(t, base+"/nothing", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/nothing: %s", resp.Status)
	}
	// net/http/pprof on the same listener: the index, a heap profile, and
	// a CPU profile longer than nothing (seconds=1) that the server's
	// timeouts do not cut off.
	if resp, body = get(t, base+"/debug/pprof/", ""); resp.StatusCode != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/: %s %.200q", resp.Status, body)
	}
	if resp, body = get(t, base+"/debug/pprof/heap?debug=1", ""); resp.StatusCode != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Errorf("/debug/pprof/heap: %s %.200q", resp.Status, body)
	}
	if resp, body = get(t, base+"/debug/pprof/profile?seconds=1", ""); resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Errorf("/debug/pprof/profile: %s %.200q", resp.Status, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	n, bytes := ScrapeLoop(ctx, base+"/metrics", 20*time.Millisecond)
	cancel()
	if n < 1 || bytes < int64(n)*1000 {
		t.Errorf("ScrapeLoop: %d scrapes, %d bytes", n, bytes)
	}

	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if err := shutdown(sctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if _, err := http.Get(base + "/metrics"); err == nil {
		t.Fatal("server still answers after shutdown")
	}
}

func TestServeDefaultsToLoopback(t *testing.T) {
	_, reg := newTestRegistry(t, Options{}, nil)
	bound, shutdown, err := Serve(":0", reg)
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())
	if !strings.HasPrefix(bound, "127.0.0.1:") {
		t.Fatalf(":0 bound %s, want loopback", bound)
	}
	if _, _, err := Serve("", reg); err == nil {
		t.Fatal(`Serve("") did not fail`)
	}
}

func TestScrapeLoopLoopbackOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, u := range []string{"http://192.0.2.1:9464/metrics", "http://example.com/metrics", "https://127.0.0.1:1/", "ftp://127.0.0.1/", "::"} {
		start := time.Now()
		if n, b := ScrapeLoop(ctx, u, time.Millisecond); n != 0 || b != 0 {
			t.Errorf("ScrapeLoop(%s) = %d, %d", u, n, b)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("ScrapeLoop(%s) took %v, want an immediate return", u, d)
		}
	}
	// A refused loopback port fails every scrape without spinning.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if n, _ := ScrapeLoop(ctx2, "http://127.0.0.1:1/metrics", 0); n != 0 {
		t.Errorf("refused port: %d scrapes", n)
	}
}

// TestConcurrentScrapes gathers from 16 goroutines (and through the HTTP
// handler) while the source's atomics change and sources are swapped; run
// it with -race.
func TestConcurrentScrapes(t *testing.T) {
	c := NewCollector(Options{PerCPU: true})
	a, b := newFake(4), newFake(3)
	c.SetSource(a, fixedInfo)
	reg := NewRegistry(c)
	srv := httptest.NewServer(Handler(reg))
	defer srv.Close()

	stop := make(chan struct{})
	var writers sync.WaitGroup
	for _, f := range []*fakeSource{a, b} {
		for i := range f.cpus {
			writers.Add(1)
			go func(f *fakeSource, i int) { // one writer per CPU, like the simulator
				defer writers.Done()
				s, l := f.cpus[i], f.locks[i]
				for v := uint64(0); ; v++ {
					select {
					case <-stop:
						return
					default:
					}
					s.Inc(stats.ContextSwitches)
					s.Inc(stats.MutexContentions)
					s.Inc(stats.MutexWaitsDone)
					s.Inc(stats.Migrations)
					s.MigrateBy[trace.MigrateReason(v%uint64(trace.NumReasons))].Add(1)
					s.Observe(stats.HistChainLength, v%9)
					s.Observe(stats.HistFPTSpins, v%33)
					s.SimTime.Add(1000)
					l.Acquisitions.Add(1)
					l.Spins.Add(v % 5)
					l.SpinHist[min(int(v%5), spinlock.SpinBuckets-1)].Add(1)
					f.nr[i].Store(int64(v % 7))
					f.events.Add(3)
					if v%1000 == 0 {
						f.violate(check.InvCounts)
					}
					if v%64 == 0 {
						runtime.Gosched() // leave the scrapers some CPU on small machines
					}
				}
			}(f, i)
		}
	}
	writers.Add(1)
	go func() { // swap sources
		defer writers.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			switch i % 3 {
			case 0:
				c.SetSource(b, RunInfo{Workload: "b", Shards: 1})
			case 1:
				c.SetSource(nil, RunInfo{Workload: "none"})
			default:
				c.SetSource(a, fixedInfo)
			}
			time.Sleep(time.Millisecond)
		}
	}()

	var scrapers sync.WaitGroup
	var ok, busy atomic.Int64
	for g := 0; g < 16; g++ {
		scrapers.Add(1)
		go func(g int) {
			defer scrapers.Done()
			for i := 0; i < 10; i++ {
				if g%2 == 0 {
					mfs, err := reg.Gather()
					if err != nil {
						t.Error(err)
						return
					}
					for _, mf := range mfs {
						for _, m := range mf.GetMetric() {
							if h := m.GetHistogram(); h != nil {
								bs := h.GetBucket()
								for j := 1; j < len(bs); j++ {
									if bs[j].GetCumulativeCount() < bs[j-1].GetCumulativeCount() {
										t.Errorf("%s: buckets not cumulative", mf.GetName())
									}
								}
								if len(bs) > 0 && bs[len(bs)-1].GetCumulativeCount() > h.GetSampleCount() {
									t.Errorf("%s: bucket above count", mf.GetName())
								}
							}
							if g := m.GetGauge(); g != nil && g.GetValue() < 0 {
								t.Errorf("%s: negative gauge", mf.GetName())
							}
						}
					}
					continue
				}
				resp, err := http.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusServiceUnavailable: // MaxRequestsInFlight
					busy.Add(1)
				default:
					t.Errorf("scrape: %s", resp.Status)
				}
			}
		}(g)
	}
	scrapers.Wait()
	close(stop)
	writers.Wait()
	if ok.Load() == 0 {
		t.Errorf("no HTTP scrape succeeded (%d busy)", busy.Load())
	}
}

// TestDeployFilesUseExportedNames checks that the alert rules, their tests
// and the Grafana dashboard in deploy/ only name metrics this package
// exports.
func TestDeployFilesUseExportedNames(t *testing.T) {
	_, reg := newTestRegistry(t, Options{PerCPU: true}, fixed())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, mf := range mfs {
		n := mf.GetName()
		known[n] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			known[n+"_bucket"], known[n+"_sum"], known[n+"_count"] = true, true, true
		}
	}
	re := regexp.MustCompile(`\bproxysim_[a-z0-9_]+`)
	files := []string{
		"../../deploy/prometheus/rules.yml",
		"../../deploy/prometheus/rules_test.yml",
		"../../deploy/grafana/dashboards/proxysim.json",
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			t.Skipf("%s: not in this checkout", f)
		}
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, name := range re.FindAllString(string(data), -1) {
			seen++
			if !known[name] {
				t.Errorf("%s names %s, which internal/metrics does not export", f, name)
			}
		}
		if seen == 0 {
			t.Errorf("%s names no proxysim metric", f)
		}
	}
}

func BenchmarkCollect(b *testing.B) {
	f := fixed()
	for i := 0; i < 62; i++ { // 64 CPUs
		f.cpus = append(f.cpus, &stats.CPU{})
		f.locks = append(f.locks, spinlock.NewCPU(i+2))
	}
	f.nr = make([]atomic.Int64, 64)
	c := NewCollector(Options{PerCPU: true})
	c.SetSource(f, fixedInfo)
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
