package sim

import (
	"fmt"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/stats"
)

func run(t testing.TB, o Options) *Summary {
	t.Helper()
	sc, err := LoadScenario(o.Workload, o.CPUs, o.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(o, sc)
	if err != nil {
		t.Fatal(err)
	}
	return r.Execute()
}

// The pi workload on the same seed with proxy execution on and off, in
// deterministic mode: the high-priority group's worst mutex wait must be
// at least 10 times lower with proxy execution on (measured: 2.0 ms
// against 49.9 ms). Deterministic, because in concurrent mode the result
// depends on the host: about 3-4 ms on against 50-103 ms off in over
// 3,000 runs of 2 s here, loaded or not, but 11.5 ms and 23 ms with proxy
// on inside a full `go test -race ./...` (on this machine and on CI). That
// open question is in docs/findings/candidates.md, not in this test.
func TestPIProxyBoundsInversion(t *testing.T) {
	o := Defaults()
	o.CPUs, o.Workload, o.SimTime, o.Seed = 8, "pi", 600*time.Millisecond, 7
	o.Deterministic, o.Strategy = true, "time"
	on := run(t, o)
	o.Proxy = false
	off := run(t, o)
	for _, s := range []*Summary{on, off} {
		if s.Failed() {
			t.Fatalf("proxy_exec=%v: %v", s.ProxyExec, s.Violations[0])
		}
	}
	hOn, hOff := on.Groups["high"], off.Groups["high"]
	if hOn.MutexAcquires == 0 || hOff.MutexAcquires == 0 {
		t.Fatalf("high group took no locks: on %+v off %+v", hOn, hOff)
	}
	ratio := float64(hOff.MaxMutexWaitNs) / float64(hOn.MaxMutexWaitNs)
	t.Logf("high max mutex wait: proxy on %v, off %v, ratio %.1f", time.Duration(hOn.MaxMutexWaitNs), time.Duration(hOff.MaxMutexWaitNs), ratio)
	if ratio < 10 {
		t.Fatalf("proxy execution cut the high group's worst mutex wait only %.1fx (on %v, off %v), want >= 10x",
			ratio, time.Duration(hOn.MaxMutexWaitNs), time.Duration(hOff.MaxMutexWaitNs))
	}
}

// Every proxy-execution path shows in its counter on the mixed workload.
func TestMixedExercisesEveryProxyPath(t *testing.T) {
	o := Defaults()
	o.CPUs, o.SimTime, o.Seed = 64, 500*time.Millisecond, 11
	s := run(t, o)
	if s.Failed() {
		t.Fatal(s.Violations[0])
	}
	for _, k := range []string{"proxy_pick_same_rq", "proxy_migrations", "return_migrations", "proxy_activates",
		"sleeping_owner_enqueues", "blocked_waiter_activations", "donor_handoffs", "find_proxy_task_retries",
		"find_proxy_task_spins", "proxy_resched_idle", "lock_juggling_retries"} {
		if s.Counters[k] == 0 {
			t.Errorf("counter %s is 0 after %v of mixed at %d CPUs", k, o.SimTime, o.CPUs)
		}
	}
	for _, r := range []string{"proxy", "chain", "return", "activation"} {
		if s.MigrationsByReason[r] == 0 {
			t.Errorf("no migration for reason %s after %v of mixed at %d CPUs", r, o.SimTime, o.CPUs)
		}
	}
	if len(s.ChainLength) < 2 {
		t.Errorf("chain length histogram %v: want chains longer than one link", s.ChainLength)
	}
}

// With proxy execution off every proxy path collapses to stock behaviour
// (invariant 21): nothing is kept queued as a donor, nothing is proxied.
func TestProxyOffIsStock(t *testing.T) {
	o := Defaults()
	o.CPUs, o.SimTime, o.Seed, o.Proxy = 16, 300*time.Millisecond, 5, false
	s := run(t, o)
	if s.Failed() {
		t.Fatal(s.Violations[0])
	}
	for _, k := range []string{"proxy_pick_same_rq", "proxy_migrations", "return_migrations", "proxy_activates",
		"sleeping_owner_enqueues", "blocked_waiter_activations", "donor_handoffs", "find_proxy_task_calls", "proxy_resched_idle"} {
		if s.Counters[k] != 0 {
			t.Errorf("proxy execution off, but %s = %d", k, s.Counters[k])
		}
	}
	for _, r := range []string{"proxy", "chain", "return", "activation"} {
		if n := s.MigrationsByReason[r]; n != 0 {
			t.Errorf("proxy execution off, but %d migrations for reason %s", n, r)
		}
	}
	if s.Counters["mutex_contentions"] == 0 {
		t.Error("no mutex contention at all: the comparison is empty")
	}
}

// The same seed gives the same workload in both modes: every task with
// the same name, group, policy, priority, mask, initial CPU and program
// (the planner must not draw differently, or depend on proxy execution),
// while the runs themselves differ.
func TestProxyOnOffSameWorkload(t *testing.T) {
	o := Defaults()
	o.CPUs, o.SimTime, o.Seed = 8, 50*time.Millisecond, 9
	tasksOf := func(o Options) ([]string, *Summary) {
		sc, err := LoadScenario(o.Workload, o.CPUs, o.Tasks)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Build(o, sc)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range r.Machine.Tasks() {
			if p == nil {
				continue
			}
			out = append(out, fmt.Sprintf("%v group %d prio %d mask %v cpu %d program %+v", p, p.Group, p.SE.Prio, p.CPUsMask, p.CPU(), p.Exec.Prog.Ops))
		}
		return out, r.Execute()
	}
	on, son := tasksOf(o)
	o.Proxy = false
	off, soff := tasksOf(o)
	if len(on) == 0 || len(on) != len(off) {
		t.Fatalf("proxy on: %d tasks, off: %d", len(on), len(off))
	}
	for i := range on {
		if on[i] != off[i] {
			t.Errorf("task %d differs:\n on: %s\noff: %s", i+1, on[i], off[i])
		}
	}
	if son.Counters["proxy_pick_same_rq"] == 0 || soff.Counters["proxy_pick_same_rq"] != 0 {
		t.Errorf("proxy picks on %d, off %d: the two runs did not differ the way they should", son.Counters["proxy_pick_same_rq"], soff.Counters["proxy_pick_same_rq"])
	}
}

var _ = stats.NumCounters
