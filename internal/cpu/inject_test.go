package cpu

import (
	"testing"

	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
	"github.com/proxysim/proxysim/internal/workload"
)

// The affinity shuffler (stress --shuffle-interval) fires once per
// interval of a busy CPU's virtual time: about one shuffle per
// interval/tick ticks.
func TestShufflerFiresAtItsInterval(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed = 8, 300_000_000, 4
	cfg.ShuffleEvery = 5 * cfg.Tick
	m := newWorkloadMachine(t, cfg, "stress", 32)
	m.Run()
	if vs := m.Rep.Violations(); len(vs) > 0 {
		t.Fatal(vs[0])
	}
	ticks := stats.Sum(m.Stats, stats.Ticks)
	shuffles := stats.Sum(m.Stats, stats.AffinityShuffles)
	// each CPU shuffles at every 5th of its ticks: floor(ticks_i/5) each
	var want float64
	for _, st := range m.Stats {
		want += float64(st.C[stats.Ticks].Load() / 5)
	}
	t.Logf("%d ticks, %d shuffles (expected %.0f)", ticks, shuffles, want)
	if shuffles == 0 || float64(shuffles) != want {
		t.Fatalf("%d shuffles in %d ticks at one per 5 ticks: want %.0f", shuffles, ticks, want)
	}
	var moved uint64
	for _, st := range m.Stats {
		moved += st.MigrateBy[trace.ReasonAffinity].Load()
	}
	if moved == 0 {
		t.Fatal("shuffles never moved a task")
	}
}

// The signal and spurious-wake injectors (stress --signal-rate,
// --spurious-wake-rate) fire, and on a workload whose locks are
// interruptible or killable they end waits with -EINTR and wake mutex
// waiters, all without a violation.
func TestSignalAndSpuriousWakeInjectors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CPUs, cfg.SimTime, cfg.Seed = 8, 300_000_000, 5
	cfg.SignalRate, cfg.SpuriousWakeRate = 2000, 2000
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := workload.Builtin("stress", cfg.CPUs, 32)
	if err != nil {
		t.Fatal(err)
	}
	addScenarioMutexes(m, sc)
	plans, err := sc.Plan(cfg.CPUs, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range plans {
		for k := range p.Prog.Ops {
			if op := &p.Prog.Ops[k]; op.Kind == task.OpLock {
				op.LockMode = task.LockInterruptible
				if (i+k)%2 == 1 {
					op.LockMode = task.LockKillable
				}
			}
		}
		c := p.Mask.Next((i * 7919) % cfg.CPUs)
		if c < 0 {
			c = p.Mask.Next(0)
		}
		if _, err := m.AddTask(TaskSpec{Name: p.Name, Group: p.Group, Policy: p.Policy, Prio: p.Prio, DL: p.DL, Mask: p.Mask, Prog: p.Prog, CPU: c, Seed: cfg.Seed + uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	m.Run()
	if vs := m.Rep.Violations(); len(vs) > 0 {
		t.Fatal(vs[0])
	}
	for _, k := range []stats.Counter{stats.SignalsSent, stats.SignalWakeups, stats.SignalsHandled, stats.MutexEINTR, stats.SpuriousWakes, stats.SpuriousWakeups} {
		n := stats.Sum(m.Stats, k)
		t.Logf("%s %d", stats.CounterNames[k], n)
		if n == 0 {
			t.Errorf("%s is 0", stats.CounterNames[k])
		}
	}
}
