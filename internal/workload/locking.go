package workload

import (
	"fmt"
	"sort"
	"strings"

	"github.com/proxysim/proxysim/internal/task"
)

// Source says where a scenario was read from, for error messages that
// name the file and the line: Lines maps a JSON path (groups[1].cpus,
// groups[0].program[3]) to its line. Built-in workloads have none.
type Source struct {
	File  string
	Lines map[string]int
}

// errAt formats an error about the value at path: "FILE: line N: PATH:
// message" for a scenario file, "PATH: message" otherwise.
func (s *Scenario) errAt(path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	if s.Source == nil {
		return fmt.Errorf("%s", msg)
	}
	for p := path; p != ""; {
		if l, ok := s.Source.Lines[p]; ok {
			return fmt.Errorf("%s: line %d: %s", s.Source.File, l, msg)
		}
		// fall back to the enclosing value: groups[0].program[3] -> groups[0]
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return fmt.Errorf("%s: %s", s.Source.File, msg)
}

// maxLockStates bounds the (pc, held mutexes) states explored per
// program; a program with more is not checked.
const maxLockStates = 1 << 16

// lockUse is where a program takes mutex b while holding a.
type lockUse struct {
	group, pc int
}

// checkLocking holds a scenario's programs to the rules of kernel
// mutexes, which the simulator enforces as protocol invariants and which
// a scenario must therefore not break on its own: along every path a
// program can take (loops and choices both ways), it never unlocks a
// mutex it does not hold and never locks one it holds; and the order in
// which tasks nest their locks has no cycle (task 1 taking b while holding
// a, task 2 taking a while holding b: a deadlock built into the scenario).
// plans are the planned tasks, their mutexes resolved.
func (s *Scenario) checkLocking(plans []TaskPlan) error {
	nm := len(s.Mutexes)
	if nm == 0 {
		return nil
	}
	edges := map[[2]int]lockUse{}
	seen := map[string]bool{}
	for _, tp := range plans {
		ops := tp.Prog.Ops
		// tasks of a group differ only in their resolved mutexes
		var key strings.Builder
		fmt.Fprintf(&key, "%d:", tp.Group)
		for _, op := range ops {
			if op.Kind == task.OpLock || op.Kind == task.OpUnlock {
				fmt.Fprintf(&key, "%d,", op.Mutex)
			}
		}
		if seen[key.String()] {
			continue
		}
		seen[key.String()] = true
		if err := s.checkProgram(tp.Group, ops, edges); err != nil {
			return err
		}
	}
	// a cycle in the lock order: depth-first search over mutexes
	next := map[int][]int{}
	for e := range edges {
		next[e[0]] = append(next[e[0]], e[1])
	}
	for _, v := range next {
		sort.Ints(v)
	}
	const (
		white = iota
		grey
		black
	)
	color := make([]int, nm)
	var stack []int
	var cycle []int
	var visit func(u int) bool
	visit = func(u int) bool {
		color[u] = grey
		stack = append(stack, u)
		for _, v := range next[u] {
			if color[v] == grey {
				for i, w := range stack {
					if w == v {
						cycle = append(append([]int(nil), stack[i:]...), v)
					}
				}
				return true
			}
			if color[v] == white && visit(v) {
				return true
			}
		}
		stack = stack[:len(stack)-1]
		color[u] = black
		return false
	}
	for u := 0; u < nm; u++ {
		if color[u] == white && visit(u) {
			break
		}
	}
	if cycle == nil {
		return nil
	}
	var names, where []string
	for i, m := range cycle {
		names = append(names, s.Mutexes[m])
		if i+1 < len(cycle) {
			u := edges[[2]int{m, cycle[i+1]}]
			where = append(where, fmt.Sprintf("groups[%d] (%s).program[%d] takes %s holding %s", u.group, s.Groups[u.group].Name, u.pc, s.Mutexes[cycle[i+1]], s.Mutexes[m]))
		}
	}
	first := edges[[2]int{cycle[0], cycle[1]}]
	return s.errAt(fmt.Sprintf("groups[%d].program[%d]", first.group, first.pc),
		"lock order cycle %s: %s; tasks can deadlock on it (take the mutexes in one order)", strings.Join(names, " -> "), strings.Join(where, ", "))
}

// checkProgram explores one program's (pc, held) states.
func (s *Scenario) checkProgram(g int, ops []task.Op, edges map[[2]int]lockUse) error {
	type state struct {
		pc   int
		held string // one byte per mutex: 1 held
	}
	nm := len(s.Mutexes)
	start := state{0, strings.Repeat("\x00", nm)}
	seen := map[state]bool{start: true}
	work := []state{start}
	push := func(st state) {
		if st.pc < len(ops) && !seen[st] && len(seen) < maxLockStates {
			seen[st] = true
			work = append(work, st)
		}
	}
	for len(work) > 0 {
		st := work[len(work)-1]
		work = work[:len(work)-1]
		op := ops[st.pc]
		path := fmt.Sprintf("groups[%d].program[%d]", g, st.pc)
		switch op.Kind {
		case task.OpLock:
			if st.held[op.Mutex] != 0 {
				return s.errAt(path, "locks %s, which the task already holds when it gets here (a self-deadlock)", s.Mutexes[op.Mutex])
			}
			for a := 0; a < nm; a++ {
				if st.held[a] != 0 {
					if _, ok := edges[[2]int{a, op.Mutex}]; !ok {
						edges[[2]int{a, op.Mutex}] = lockUse{g, st.pc}
					}
				}
			}
			h := []byte(st.held)
			h[op.Mutex] = 1
			push(state{st.pc + 1, string(h)})
		case task.OpUnlock:
			if st.held[op.Mutex] == 0 {
				return s.errAt(path, "unlocks %s, which the task does not hold when it gets here (a mutex is unlocked by its owner only)", s.Mutexes[op.Mutex])
			}
			h := []byte(st.held)
			h[op.Mutex] = 0
			push(state{st.pc + 1, string(h)})
		case task.OpLoop:
			push(state{op.Jump, st.held})
			if op.Count != 0 {
				push(state{st.pc + 1, st.held})
			}
		case task.OpChoose:
			if op.Prob > 0 {
				push(state{op.Jump, st.held})
			}
			if op.Prob < 1 {
				push(state{st.pc + 1, st.held})
			}
		case task.OpExit:
		default:
			push(state{st.pc + 1, st.held})
		}
	}
	return nil
}
