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
		res, err := Shrink(o, sc, "one-queue", ShrinkOptions{MaxTries: 12, Seeds: 3, Workers: workers})
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

// detFailure is a deterministic stress run at cpus CPUs with bug on, at
// the first seed from seed on that breaks an invariant within 100ms of
// virtual time: its options, scenario and invariant.
func detFailure(t *testing.T, bug string, cpus int, seed uint64) (Options, *workload.Scenario, string) {
	t.Helper()
	o := Defaults()
	o.CPUs, o.Workload, o.SimTime = cpus, "stress", 100*time.Millisecond
	o.Deterministic, o.Strategy = true, "random"
	set, err := bugs.Parse([]string{bug})
	if err != nil {
		t.Fatal(err)
	}
	o.Bugs = set
	for k := uint64(0); k < 20; k++ {
		o.Seed = seed + k
		sc, err := LoadScenario(o.Workload, o.CPUs, o.Tasks)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Build(o, sc)
		if err != nil {
			t.Fatal(err)
		}
		if s := r.Execute(); s.Failed() {
			sc, _ = LoadScenario(o.Workload, o.CPUs, o.Tasks)
			return o, sc, s.Violations[0].Name
		}
	}
	t.Fatalf("%s: no failure on seeds %d-%d", bug, seed, seed+19)
	return o, nil, ""
}

// runsAgain builds the shrunk case from its options and scenario and
// says whether it breaks inv.
func runsAgain(t *testing.T, res ShrinkResult, inv string) bool {
	t.Helper()
	r, err := Build(res.Options, clone(res.Scenario))
	if err != nil {
		t.Fatalf("the shrunk case does not build: %v", err)
	}
	s := r.Execute()
	return s.Failed() && s.Violations[0].Name == inv && s.Violations[0].Seq == res.Violation.Seq
}

// From a 16-CPU failure the shrink reaches a machine of at most 8 CPUs
// and 8 tasks, and the case it returns fails the same way at the same
// event when built from its own options (seed, strategy, injectors, sim
// time). The test stops the shrink once it gets there (the rest of the
// passes only make the case smaller); the budget is a safety net.
func TestShrinkReachesSmallMachine(t *testing.T) {
	o, sc, inv := detFailure(t, "dangling-donor", 16, 5)
	start := time.Now()
	stop := make(chan struct{})
	reached := false
	res, err := Shrink(o, sc, inv, ShrinkOptions{Seeds: 2, Budget: 3 * time.Minute, Stop: stop,
		Progress: func(z Size, what string) {
			t.Logf("%6.1fs kept %s -> %v", time.Since(start).Seconds(), what, z)
			if z.CPUs <= 8 && z.Tasks <= 8 && !reached {
				reached = true
				close(stop)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	z := SizeOf(res.Scenario, res.Scenario.CPUs)
	t.Logf("%s from 16 CPUs, %d tasks: %v in %v, %d runs, fails at event #%d with %s, seed %d",
		inv, sc.NumTasks(), z, time.Since(start).Round(time.Millisecond), res.Tries, res.Violation.Seq, res.Options.Strategy, res.Seed)
	if z.CPUs > 8 || z.Tasks > 8 {
		t.Errorf("shrunk to %v (budget spent: %v), want at most 8 CPUs and 8 tasks", z, res.BudgetSpent)
	}
	if !runsAgain(t, res, inv) {
		t.Errorf("the shrunk case does not fail with %s at event #%d again", inv, res.Violation.Seq)
	}
}

// A shrink given a budget of 2s ends within a few seconds of it, with
// the smallest failing case found so far: one that fails the same way.
// The recorded run is run whole before the budget counts down.
func TestShrinkBudget(t *testing.T) {
	o, sc, inv := detFailure(t, "owner-mid-return", 16, 5)
	const budget = 2 * time.Second
	start := time.Now()
	res, err := Shrink(o, sc, inv, ShrinkOptions{Seeds: 4, Budget: budget})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	z := SizeOf(res.Scenario, res.Scenario.CPUs)
	t.Logf("%v after %v (%d runs)", z, took.Round(time.Millisecond), res.Tries)
	if !res.BudgetSpent {
		t.Fatalf("the shrink ended in %v, before its budget: the test needs a longer one", took)
	}
	// generous: the race detector and a loaded host slow the runs the
	// budget stops and waits for
	if took > budget+10*time.Second {
		t.Errorf("a shrink with a budget of %v took %v", budget, took)
	}
	if z.CPUs > 16 || z.Tasks > sc.NumTasks() {
		t.Errorf("the result %v is larger than the start (16 CPUs, %d tasks)", z, sc.NumTasks())
	}
	if !runsAgain(t, res, inv) {
		t.Errorf("the case kept when the budget ran out does not fail with %s at event #%d again", inv, res.Violation.Seq)
	}
}
