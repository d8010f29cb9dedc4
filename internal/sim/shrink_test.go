package sim

import (
	"bytes"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/workload"
)

// Shrink runs a candidate's seeds side by side (Workers), and its answer
// must not depend on that: the same scenario, seed and count of tries as
// trying the seeds one by one.
func TestShrinkWorkersSameAnswer(t *testing.T) {
	o := Defaults()
	o.CPUs, o.Workload, o.Seed, o.SimTime = 4, "stress", 5, 200*time.Millisecond
	o.Deterministic, o.Strategy = true, "random"
	o.MaxSkew = time.Millisecond // the hunting commands' skew bound, as a report to shrink has it
	set, err := bugs.Parse([]string{"owner-mid-return"})
	if err != nil {
		t.Fatal(err)
	}
	o.Bugs = set
	type answer struct {
		enc   []byte
		seed  uint64
		tries int
	}
	run := func(workers int) answer {
		sc, err := LoadScenario(o.Workload, o.CPUs, o.Tasks)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Shrink(o, sc, "one-queue", ShrinkOptions{MaxTries: 24, Seeds: 3, Workers: workers})
		if err != nil {
			t.Fatalf("workers=%d: %v", workers, err)
		}
		enc, err := workload.Encode(res.Scenario)
		if err != nil {
			t.Fatal(err)
		}
		return answer{enc, res.Seed, res.Tries}
	}
	one, three := run(1), run(3)
	if one.seed != three.seed || one.tries != three.tries || !bytes.Equal(one.enc, three.enc) {
		t.Fatalf("one worker: seed %d, %d tries; three workers: seed %d, %d tries; scenarios equal: %v",
			one.seed, one.tries, three.seed, three.tries, bytes.Equal(one.enc, three.enc))
	}
	if one.tries < 8 {
		t.Errorf("only %d tries: the test does not exercise the parallel path", one.tries)
	}
}
