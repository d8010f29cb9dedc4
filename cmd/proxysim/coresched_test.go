package main

import (
	"path/filepath"
	"testing"
)

// A core-scheduled deterministic stress run with proxy execution is clean:
// no invariant of the model's own fires on the kernel's behaviour. Seeds
// 5-7 at 8 CPUs break invariant 44 (core-cookie) within 10 ms of virtual
// time when the check takes only a pending TIF_NEED_RESCHED for a
// sibling's licence to run another cookie: with the flag a task's, a
// sibling inside __schedule whose find_proxy_task dropped the core lock
// (prev still rq->curr, flag cleared, proxy_resched_idle's flag on the
// idle task) is running the scheduler, not prev.
func TestCoreSchedStressClean(t *testing.T) {
	for _, seed := range []string{"5", "6", "7"} {
		code, _, errOut := runCLI(t, "stress", "--core-sched", "--cpus", "8", "--deterministic", "--strategy", "random",
			"--sim-time", "300ms", "--seed", seed, "--stat-interval", "0", "--duration", "0", "--report", filepath.Join(t.TempDir(), "r.txt"))
		if code != exitOK {
			t.Fatalf("seed %s: exit %d:\n%s", seed, code, tail(errOut, 2000))
		}
	}
}
