package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/spinlock"
)

func runIRQ(t *testing.T, bug bool, rebuild time.Duration, deterministic bool) (*Summary, *Run) {
	t.Helper()
	o := Defaults()
	o.CPUs, o.Tasks, o.SimTime, o.Seed = 8, 16, 30*time.Millisecond, 3
	o.DomainRebuildInterval = rebuild
	o.Deterministic = deterministic
	if deterministic {
		o.Strategy = "random"
	}
	if bug {
		o.Bugs = bugs.Set(0).With(bugs.UpdateDomainsIRQsOn)
	}
	sc, err := LoadScenario(o.Workload, o.CPUs, o.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(o, sc)
	if err != nil {
		t.Fatal(err)
	}
	return r.Execute(), r
}

// The default model is IRQ-consistent: ticks, IPIs, hrtimers and the
// balance softirq against every process-context path, with domain
// rebuilds from the stress injector too, and no report.
func TestIRQLockdepCleanByDefault(t *testing.T) {
	for _, det := range []bool{false, true} {
		s, r := runIRQ(t, false, 2*time.Millisecond, det)
		if s.Failed() {
			t.Fatalf("deterministic=%v: %v", det, s.Violations[0])
		}
		// The contexts are modelled: the tick, IPIs and hrtimers take the
		// rq lock in hard IRQ, the balancer in softirq; nothing takes it
		// with IRQs on.
		if u := r.Machine.Dep.Usage(spinlock.ClassRQ); u != spinlock.UsedInHardirq|spinlock.UsedInSoftirq {
			t.Fatalf("deterministic=%v: rq->lock usage %v %s, want IN-HARDIRQ-W|IN-SOFTIRQ-W", det, u.Chars(), u)
		}
		// One at boot, one per 2ms of the 30ms run by the injector.
		if n := s.Counters["domain_rebuilds"]; n < 10 {
			t.Fatalf("deterministic=%v: %d domain rebuilds, want the boot one and the injector's", det, n)
		}
	}
}

// --bug update-domains-irqs-on: the boot rebuild takes the rq locks with
// IRQs on after the boot CPU's tick took the class in hard-IRQ context.
// The report is the seed thread's splat, in the model's words: both
// usages, the class, the CPU and task, both sites.
func TestUpdateDomainsIRQsOnIsCaught(t *testing.T) {
	s, _ := runIRQ(t, true, 0, true)
	if !s.Failed() {
		t.Fatal("update-domains-irqs-on not caught")
	}
	v := s.Violations[0]
	if v.Invariant != check.InvIRQLockUsage {
		t.Fatalf("caught by %v, want invariant 46", v)
	}
	for _, p := range []string{
		"WARNING: inconsistent lock state",
		"inconsistent {IN-HARDIRQ-W} -> {HARDIRQ-ON-W} usage.",
		"cpu0 swapper/0/0 [HC0[0]:SC0[0]:HE1:SE1] takes:",
		"(rq->lock#0){?...}, at: rq.(*RQ).Lock",
		"{IN-HARDIRQ-W} state was first recorded by cpu0",
		"cpu.(*Machine).earlyBootTick",
		"cpu.(*Machine).updateDomainsFair",
		"cpu.(*Machine).schedInitDomains",
		"<Interrupt>",
	} {
		if !strings.Contains(v.Message, p) {
			t.Fatalf("report lacks %q:\n%s", p, v.Message)
		}
	}
}
