//go:build race && (amd64 || arm64)

package trace

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestEventsGiveNoHappensBefore: a plain write on one CPU followed by an
// event there, and an event on another CPU followed by a plain read of the
// same word, are a race the detector must report. With the sequence number
// taken by a sync/atomic Add it does not: the two Adds order the write
// before the read. The pair runs in a -race child (this test binary).
func TestEventsGiveNoHappensBefore(t *testing.T) {
	if os.Getenv("PROXYSIM_SEQ_CHILD") != "" {
		t.Skip("the child runs TestSeqChild only")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSeqChild$", "-test.v")
	cmd.Env = append(os.Environ(), "PROXYSIM_SEQ_CHILD=1", "GORACE=halt_on_error=1")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "WARNING: DATA RACE") || !strings.Contains(string(out), "seqChildPair") {
		t.Fatalf("the race detector did not report the write and read across two events:\n%s", out)
	}
}

// TestSeqChild runs only as TestEventsGiveNoHappensBefore's child.
func TestSeqChild(t *testing.T) {
	if os.Getenv("PROXYSIM_SEQ_CHILD") == "" {
		t.Skip("only run as a child of TestEventsGiveNoHappensBefore")
	}
	seqChildPair()
}

var seqChildWord int

// seqChildPair writes on cpu0 and emits there, then (sleeps order nothing
// for the detector) emits on cpu1 and reads.
func seqChildPair() {
	l := NewLog(2, 16)
	done := make(chan struct{})
	go func() {
		seqChildWord = 1
		l.Rings[0].Emit(1, 0, 0, 0, 0, 0)
		time.Sleep(200 * time.Millisecond)
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	l.Rings[1].Emit(2, 0, 0, 0, 0, 0)
	_ = seqChildWord
	<-done
}
