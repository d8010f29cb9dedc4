//go:build race && (amd64 || arm64)

package relaxed

import (
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestAddGivesNoHappensBefore: a plain write followed by an AddUint64 on
// one goroutine, and an AddUint64 on the same word followed by a plain
// read of the written one on another, are a race the detector must report.
// A sync/atomic Add in AddUint64's place orders the write before the read
// and the detector says nothing. The pair runs in a -race child.
func TestAddGivesNoHappensBefore(t *testing.T) {
	if os.Getenv("PROXYSIM_RELAXED_CHILD") != "" {
		t.Skip("the child runs TestRelaxedChild only")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRelaxedChild$", "-test.v")
	cmd.Env = append(os.Environ(), "PROXYSIM_RELAXED_CHILD=1", "GORACE=halt_on_error=1")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "WARNING: DATA RACE") || !strings.Contains(string(out), "relaxedChildPair") {
		t.Fatalf("the race detector did not report the write and read across two relaxed adds:\n%s", out)
	}
}

// TestRelaxedChild runs only as TestAddGivesNoHappensBefore's child.
func TestRelaxedChild(t *testing.T) {
	if os.Getenv("PROXYSIM_RELAXED_CHILD") == "" {
		t.Skip("only run as a child of TestAddGivesNoHappensBefore")
	}
	relaxedChildPair()
}

var childWord int

// relaxedChildPair writes and adds on one goroutine, then (sleeps order
// nothing for the detector) adds and reads on another.
func relaxedChildPair() {
	var ctr atomic.Uint64
	done := make(chan struct{})
	go func() {
		childWord = 1
		AddUint64(&ctr, 1)
		time.Sleep(200 * time.Millisecond)
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	AddUint64(&ctr, 1)
	_ = childWord
	<-done
}
