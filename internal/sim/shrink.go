package sim

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/workload"
)

// Size measures a scenario for shrinking.
type Size struct {
	CPUs, Tasks, Mutexes, Ops int
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

// Shrink reduces a failing deterministic run (o, sc) to a smaller
// scenario that still fails with the same invariant: fewer CPUs, fewer
// tasks per group, fewer groups, fewer mutexes, fewer program steps. Each
// candidate is one deterministic run with the same seed, strategy and
// bugs; a change is kept when the run still breaks the invariant. Greedy
// passes (one element at a time, halving counts first) repeat until none
// helps. progress, if set, is told of every kept change.
func Shrink(o Options, sc *workload.Scenario, invariant string, maxTries int, progress func(Size, string)) (*workload.Scenario, int, error) {
	o.Deterministic = true
	cpus := o.CPUs
	if sc.CPUs > 0 {
		cpus = sc.CPUs
	}
	cur := clone(sc)
	cur.CPUs = cpus
	if cur.Topology == "" {
		cur.Topology = o.Topology // the shrunk scenario keeps the machine's shape
	}
	tries := 0
	fails := func(c *workload.Scenario) bool {
		if tries >= maxTries {
			return false
		}
		tries++
		oo := o
		oo.CPUs, oo.Topology = c.CPUs, c.Topology
		r, err := Build(oo, c)
		if err != nil {
			return false
		}
		s := r.Execute()
		return s.Failed() && s.Violations[0].Name == invariant
	}
	if !fails(cur) {
		return nil, tries, fmt.Errorf("the run does not fail with %s to begin with", invariant)
	}
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
	for changed := true; changed && tries < maxTries; {
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
	return cur, tries, nil
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
		}
	}
	return true
}

// dropOp removes step k, pointing jumps past it one step earlier and
// jumps to it at what follows it.
func dropOp(p []workload.Op, k int) []workload.Op {
	out := append(append([]workload.Op(nil), p[:k]...), p[k+1:]...)
	for i := range out {
		if out[i].Kind == task.OpLoop || out[i].Kind == task.OpChoose {
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
