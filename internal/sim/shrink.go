package sim

import (
	"fmt"
	"runtime"

	"github.com/proxysim/proxysim/internal/cpu"

	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/workload"
)

// Size measures a scenario for shrinking.
type Size struct {
	CPUs    int `json:"cpus"`
	Tasks   int `json:"tasks"`
	Mutexes int `json:"mutexes"`
	Ops     int `json:"program_steps"`
}

func (s Size) String() string {
	return fmt.Sprintf("%d CPUs, %d tasks, %d mutexes, %d program steps", s.CPUs, s.Tasks, s.Mutexes, s.Ops)
}

// SizeOf measures sc on cpus CPUs.
func SizeOf(sc *workload.Scenario, cpus int) Size {
	z := Size{CPUs: cpus, Mutexes: len(sc.Mutexes)}
	for _, g := range sc.Groups {
		z.Tasks += g.Count
		z.Ops += len(g.Program)
	}
	return z
}

// ShrinkOptions tune Shrink.
type ShrinkOptions struct {
	// MaxTries bounds the candidate runs.
	MaxTries int
	// Seeds is how many seeds a candidate is tried on: the run's own,
	// then the next ones, in order (1 or less: the run's own only). A
	// deterministic interleaving hangs on every detail of the scenario, so
	// a smaller scenario rarely fails on the very same seed; it often does
	// on a neighbour.
	Seeds int
	// Progress, if set, is told of every kept change.
	Progress func(Size, string)
	// Workers is how many of a candidate's seeds run at once (0: GOMAXPROCS).
	// The result does not depend on it.
	Workers int
	// Stop, when closed, ends the shrink at once with the smallest
	// failing scenario found so far.
	Stop <-chan struct{}
}

// ShrinkResult is the smallest failing scenario found.
type ShrinkResult struct {
	Scenario    *workload.Scenario
	Seed        uint64 // the seed it fails on
	Tries       int    // candidate runs
	Interrupted bool   // Stop was closed
}

// Shrink reduces a failing deterministic run (o, sc) to a smaller
// scenario that still fails with the same invariant: fewer CPUs, fewer
// tasks per group, fewer groups, fewer mutexes, fewer program steps. Each
// candidate is a deterministic run with the same strategy and bugs, on
// the current seed and then the next so.Seeds-1 ones; a change is kept
// when one of them still breaks the invariant (and that seed becomes the
// current one). Greedy passes (one element at a time, halving counts
// first) repeat until none helps.
func Shrink(o Options, sc *workload.Scenario, invariant string, so ShrinkOptions) (ShrinkResult, error) {
	o.Deterministic = true
	maxTries := so.MaxTries
	cpus := o.CPUs
	if sc.CPUs > 0 {
		cpus = sc.CPUs
	}
	cur := clone(sc)
	cur.CPUs = cpus
	if cur.Topology == "" {
		cur.Topology = o.Topology // the shrunk scenario keeps the machine's shape
	}
	seed := o.Seed
	tries := 0
	stopped := func() bool {
		select {
		case <-so.Stop:
			return true
		default:
			return false
		}
	}
	// Candidates are bounded by conductor turns: one that has not failed
	// within four times the turns the original took to fail (plus a
	// million) counts as not failing. A counted bound, not a wall-clock
	// one, so that the shrink does not depend on the host's speed; it
	// keeps candidates that lost their compute and sleep steps (and spin)
	// from taking seconds each.
	var stepBudget uint64
	const budgetStop = "shrink: turn budget spent"
	// runOn runs candidate c on one seed, until it fails, its turn
	// budget is spent, so.Stop closes or cancel does.
	runOn := func(c *workload.Scenario, sd uint64, cancel <-chan struct{}) (failed bool, steps uint64) {
		oo := o
		oo.CPUs, oo.Topology, oo.Seed = c.CPUs, c.Topology, sd
		if lim := stepBudget; lim > 0 {
			prev := oo.OnEpoch
			oo.OnEpoch = func(m *cpu.Machine, h int64) {
				if m.ScheduleSteps() > lim {
					m.Stop(budgetStop)
				}
				if prev != nil {
					prev(m, h)
				}
			}
		}
		r, err := Build(oo, c)
		if err != nil {
			return false, 0
		}
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-so.Stop:
				r.Stop("shrink interrupted")
			case <-cancel:
				r.Stop("shrink: a lower seed decided")
			case <-done:
			}
		}()
		s := r.Execute()
		return s.Failed() && s.Violations[0].Name == invariant && !stopped() && r.Machine.StopReason() != budgetStop, s.ScheduleSteps
	}
	// failsOn runs candidate c on one seed, counted as a try.
	failsOn := func(c *workload.Scenario, sd uint64) bool {
		if tries >= maxTries || stopped() {
			return false
		}
		tries++
		failed, steps := runOn(c, sd, nil)
		if stepBudget == 0 {
			stepBudget = 4*steps + 1_000_000
		}
		return failed
	}
	workers := so.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// fails tries c on the current seed and the next so.Seeds-1, in
	// order, and keeps the first that fails. With workers > 1 the seeds
	// run side by side (a deterministic run uses one goroutine at a time,
	// so one core): a candidate that fails on none, most of them, costs
	// the time of Seeds/workers runs. The answer and the tries counted
	// are those of trying the seeds one by one: results are read in seed
	// order, a try is counted only where the sequential loop would have
	// run it, and the runs of higher seeds are stopped once a lower one
	// decided.
	fails := func(c *workload.Scenario) bool {
		n := max(1, so.Seeds)
		if workers == 1 || n == 1 {
			for k := 0; k < n; k++ {
				if failsOn(c, seed+uint64(k)) {
					seed += uint64(k)
					return true
				}
			}
			return false
		}
		cancel := make(chan struct{})
		results := make([]chan bool, n)
		for k := range results {
			results[k] = make(chan bool, 1)
		}
		base := seed
		go func() { // dispatch in seed order, at most workers at once
			sem := make(chan struct{}, workers)
			for k := 0; k < n; k++ {
				select {
				case sem <- struct{}{}:
				case <-cancel:
					for ; k < n; k++ {
						results[k] <- false
					}
					return
				}
				go func(k int) {
					failed, _ := runOn(clone(c), base+uint64(k), cancel)
					results[k] <- failed
					<-sem
				}(k)
			}
		}()
		next := 0 // results read so far
		defer func() {
			close(cancel)
			for ; next < n; next++ {
				<-results[next] // every run dispatched has ended
			}
		}()
		for next < n {
			if tries >= maxTries || stopped() {
				return false
			}
			tries++
			k := next
			next++
			if <-results[k] {
				seed = base + uint64(k)
				return true
			}
		}
		return false
	}
	if !failsOn(cur, seed) {
		if stopped() {
			return ShrinkResult{Scenario: cur, Seed: seed, Tries: tries, Interrupted: true}, nil
		}
		return ShrinkResult{Tries: tries}, fmt.Errorf("the run does not fail with %s to begin with", invariant)
	}
	progress := so.Progress
	keep := func(c *workload.Scenario, what string) bool {
		if fails(c) {
			cur = c
			if progress != nil {
				progress(SizeOf(cur, cur.CPUs), what)
			}
			return true
		}
		return false
	}
	for changed := true; changed && tries < maxTries && !stopped(); {
		changed = false
		// CPUs: halve, then one at a time.
		for n := cur.CPUs / 2; n >= 1 && tries < maxTries; n /= 2 {
			c := clone(cur)
			c.CPUs = n
			c.Topology = "" // a smaller machine has the default shape of its size
			if keep(c, fmt.Sprintf("cpus -> %d", n)) {
				changed = true
			} else {
				break
			}
		}
		if cur.CPUs > 1 {
			c := clone(cur)
			c.CPUs--
			c.Topology = ""
			if keep(c, fmt.Sprintf("cpus -> %d", c.CPUs)) {
				changed = true
			}
		}
		// Tasks: halve each group's count, then drop one.
		for gi := range cur.Groups {
			for cur.Groups[gi].Count > 1 && tries < maxTries {
				c := clone(cur)
				c.Groups[gi].Count = max(1, c.Groups[gi].Count/2)
				if !keep(c, fmt.Sprintf("%s count -> %d", c.Groups[gi].Name, c.Groups[gi].Count)) {
					c = clone(cur)
					c.Groups[gi].Count--
					if !keep(c, fmt.Sprintf("%s count -> %d", c.Groups[gi].Name, c.Groups[gi].Count)) {
						break
					}
				}
				changed = true
			}
		}
		// Whole groups no other group targets.
		for gi := len(cur.Groups) - 1; gi >= 0 && len(cur.Groups) > 1; gi-- {
			if targeted(cur, gi) {
				continue
			}
			c := clone(cur)
			c.Groups = append(c.Groups[:gi], c.Groups[gi+1:]...)
			for k := range c.Groups {
				for j := range c.Groups[k].Program {
					if tg := c.Groups[k].Program[j].TargetGroup; tg > gi {
						c.Groups[k].Program[j].TargetGroup = tg - 1
					}
				}
			}
			if keep(c, fmt.Sprintf("group %s removed", cur.Groups[gi].Name)) {
				changed = true
			}
		}
		// Mutexes from the end, while nothing names them.
		for len(cur.Mutexes) > 1 && tries < maxTries {
			c := clone(cur)
			c.Mutexes = c.Mutexes[:len(c.Mutexes)-1]
			if !mutexesOK(c) || !keep(c, fmt.Sprintf("mutexes -> %d", len(c.Mutexes))) {
				break
			}
			changed = true
		}
		// Program steps, one at a time (jumps remapped).
		for gi := range cur.Groups {
			for k := len(cur.Groups[gi].Program) - 1; k >= 0 && len(cur.Groups[gi].Program) > 1 && tries < maxTries; k-- {
				if k >= len(cur.Groups[gi].Program) {
					continue
				}
				c := clone(cur)
				c.Groups[gi].Program = dropOp(c.Groups[gi].Program, k)
				if keep(c, fmt.Sprintf("%s step %d removed", c.Groups[gi].Name, k)) {
					changed = true
				}
			}
		}
	}
	return ShrinkResult{Scenario: cur, Seed: seed, Tries: tries, Interrupted: stopped()}, nil
}

func clone(s *workload.Scenario) *workload.Scenario {
	c := *s
	c.Mutexes = append([]string(nil), s.Mutexes...)
	c.Groups = make([]workload.Group, len(s.Groups))
	for i, g := range s.Groups {
		g.Program = append([]workload.Op(nil), g.Program...)
		c.Groups[i] = g
	}
	return &c
}

func targeted(s *workload.Scenario, gi int) bool {
	for k, g := range s.Groups {
		if k == gi {
			continue
		}
		for _, op := range g.Program {
			if op.TargetGroup == gi {
				return true
			}
		}
	}
	return false
}

func mutexesOK(s *workload.Scenario) bool {
	for _, g := range s.Groups {
		if g.Slots > len(s.Mutexes) {
			return false
		}
		for _, op := range g.Program {
			if (op.Kind == task.OpLock || op.Kind == task.OpUnlock) && op.MutexMode == workload.MutexFixed && op.Mutex >= len(s.Mutexes) {
				return false
			}
			if (op.Kind == task.OpWWLock || op.Kind == task.OpWWUnlock) && op.MutexMode == workload.MutexFixed && len(s.WW) > 0 {
				// a ww_mutex named by index: its index moves with the
				// plain mutexes before it
				return false
			}
		}
	}
	return true
}

// dropOp removes step k, pointing jumps past it one step earlier and
// jumps to it at what follows it.
func dropOp(p []workload.Op, k int) []workload.Op {
	out := append(append([]workload.Op(nil), p[:k]...), p[k+1:]...)
	for i := range out {
		if out[i].Kind == task.OpLoop || out[i].Kind == task.OpChoose || out[i].Kind == task.OpWWLock {
			if out[i].Jump > k {
				out[i].Jump--
			}
			if out[i].Jump >= len(out) {
				out[i].Jump = len(out) - 1
			}
		}
	}
	return out
}
