package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Finding F4 (docs/findings.md): the kernel's plain read of is_blocked in
// do_activate_blocked_waiter, under the waiter's pi_lock alone, races with
// its writers, which hold only the rq lock. The documented reproducer: a
// race build of proxysim, `stress --seed 7 --bug is-blocked-plain-read`
// on the default 256 CPUs, reports the race (after about 20 s of wall
// time on the 2-core development machine). The fixed form (READ_ONCE) is
// what every other -race test and soak runs.
func TestFindingIsBlockedPlainReadIsARace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds proxysim with -race and hunts a data race (minutes)")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain on PATH")
	}
	bin := filepath.Join(t.TempDir(), "proxysim-race")
	if out, err := exec.Command(gobin, "build", "-race", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build -race: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "stress", "--seed", "7", "--bug", "is-blocked-plain-read", "--duration", "240s",
		"--stat-interval", "0", "--report", filepath.Join(t.TempDir(), "r.report"))
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1")
	out, _ := cmd.CombinedOutput()
	text := string(out)
	if !strings.Contains(text, "WARNING: DATA RACE") {
		t.Fatalf("the race detector did not report the plain is_blocked read in 240 s:\n%s", tail(text, 3000))
	}
	if !strings.Contains(text, "doActivateBlockedWaiter") || !strings.Contains(text, "IsBlocked") {
		t.Fatalf("a race was reported, but not the is_blocked read of do_activate_blocked_waiter:\n%s", tail(text, 3000))
	}
}
