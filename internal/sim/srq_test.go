package sim

import (
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/rq"
)

// SHARED_RUNQ runs clean in every hook placement with every bailout and
// a newidle cost, on the mixed workload (donors, proxy migrations) and on
// tbench, and does what its counters say: it pushes, pops and pulls, and
// v4 skips the <= LLC domains. --newidle-cost must be charged to nobody:
// charged to prev it broke invariant 20 (runtime), which this test saw.
func TestSharedRunqRunsClean(t *testing.T) {
	for _, hooks := range []int{rq.SRQHooksV2, rq.SRQHooksV3, rq.SRQHooksV4} {
		for _, wl := range []string{"mixed", "tbench:clients=2"} {
			o := Defaults()
			o.CPUs, o.Workload, o.SimTime, o.Seed = 8, wl, 15*time.Millisecond, 3
			o.Deterministic, o.Strategy = true, "time"
			o.SharedRunq, o.SRQHooks, o.SRQBailouts = "on", hooks, rq.BailOverload|rq.BailTTWUPending|rq.BailChargeCost|rq.BailAvgIdle
			o.NewidleCost = 2 * time.Microsecond
			s := run(t, o)
			if s.Failed() {
				t.Fatalf("v%d %s: %v", hooks, wl, s.Violations[0])
			}
			c := s.Counters
			if wl == "mixed" && (c["srq_pushes"] == 0 || c["srq_pull_attempts"] == 0 || c["srq_pops"] == 0) {
				t.Errorf("v%d mixed: pushes %d, pull attempts %d, pops %d: the shared runqueue is not used", hooks, c["srq_pushes"], c["srq_pull_attempts"], c["srq_pops"])
			}
			if hooks == rq.SRQHooksV4 && c["srq_skip_llc"] == 0 && c["srq_pull_attempts"] > 0 {
				t.Errorf("v4 %s: no <= LLC domain skipped in %d newidle pulls", wl, c["srq_pull_attempts"])
			}
		}
	}
}

// A migrate-disabled task switched out is pinned (cpus_ptr points at its
// CPU): the shared_runq pop's lockless is_cpu_allowed must see that, or
// v2/v3, whose pull has no affinity recheck, move it (invariant 49). The
// published mask ignored cpus_ptr until the merge with migrate_disable;
// without it this test breaks invariant 49 (v2 and v3).
func TestSharedRunqMigrateDisabled(t *testing.T) {
	for _, hooks := range []int{rq.SRQHooksV2, rq.SRQHooksV3} {
		o := Defaults()
		o.CPUs, o.Workload, o.SimTime, o.Seed = 8, "stress", 30*time.Millisecond, 3
		o.Deterministic, o.Strategy = true, "random"
		o.SharedRunq, o.SRQHooks = "on", hooks
		o.MigrateDisable = 0.3
		s := run(t, o)
		if s.Failed() {
			t.Fatalf("v%d: %v", hooks, s.Violations[0])
		}
	}
}
