package explain

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/trace"
)

// script builds a step list from lines "CPU PATH OP ...":
//
//	0 f>g lock 3 5         (class 3, key 5)
//	0 f>g unlock 3 5
//	0 f>g read  task 7 on_rq 0
//	0 f>g write task 7 on_rq 1
//	0 f>g check 15
type script struct {
	steps []trace.Step
	paths []string
}

var fieldByName = func() map[string]trace.Field {
	m := map[string]trace.Field{}
	for f := trace.Field(1); f < trace.NumFields; f++ {
		m[f.String()] = f
	}
	return m
}()

func (sc *script) path(p string) uint32 {
	for i, q := range sc.paths {
		if q == p {
			return uint32(i)
		}
	}
	sc.paths = append(sc.paths, p)
	return uint32(len(sc.paths) - 1)
}

func parseScript(t *testing.T, text string) *script {
	t.Helper()
	sc := &script{paths: []string{""}}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		w := strings.Fields(l)
		if len(w) == 0 {
			continue
		}
		var cpu int16
		fmt.Sscan(w[0], &cpu)
		s := trace.Step{CPU: cpu, Path: sc.path(w[1])}
		switch w[2] {
		case "lock", "unlock":
			s.Kind = trace.StepLock
			if w[2] == "unlock" {
				s.Kind = trace.StepUnlock
			}
			var c uint8
			fmt.Sscan(w[3], &c)
			s.Class = c
			fmt.Sscan(w[4], &s.ID)
		case "read", "write":
			s.Kind = trace.StepRead
			if w[2] == "write" {
				s.Kind = trace.StepWrite
			}
			switch w[3] {
			case "task":
				s.Obj = trace.ObjTask
			case "rq":
				s.Obj = trace.ObjRQ
			case "mutex":
				s.Obj = trace.ObjMutex
			}
			fmt.Sscan(w[4], &s.ID)
			f, ok := fieldByName[w[5]]
			if !ok {
				t.Fatalf("unknown field %q", w[5])
			}
			s.Field = f
			fmt.Sscan(w[6], &s.Val)
		case "check":
			s.Kind = trace.StepCheck
			s.CPU = -1
			fmt.Sscan(w[3], &s.Val)
		default:
			t.Fatalf("bad line %q", l)
		}
		sc.steps = append(sc.steps, s)
	}
	return sc
}

func (sc *script) input(f Failure) *Input {
	return &Input{Steps: sc.steps, Path: func(i uint32) string { return sc.paths[i] }, Failure: f,
		Names: Names{
			Task:      func(id int32) string { return map[int32]string{1: "owner-0/1", 2: "donor-0/2", 3: "other-0/3"}[id] },
			RQLockCPU: func(k int32) int { return int(k) },
		}}
}

// The F1 shape: CPU1 wakes the owner O (1) through CPU2's wake list and
// its activation pass finds O's list empty; CPU0's find_proxy_task reads
// O->on_rq == 0 under O's blocked_lock and parks D (2) on it; CPU2 then
// enqueues O. Noise: an unrelated task (3) on CPU3.
const f1 = `
3 pick_next_task write task 3 on_rq 1
1 try_to_wake_up lock 0 1
1 try_to_wake_up write task 1 __state 3
1 try_to_wake_up>ttwu_queue_wakelist write task 1 wake_entry 2
1 try_to_wake_up unlock 0 1
1 try_to_wake_up>activate_blocked_waiters lock 3 1
1 try_to_wake_up>activate_blocked_waiters read task 1 blocked_head 0
1 try_to_wake_up>activate_blocked_waiters unlock 3 1
3 pick_next_task read task 3 on_rq 1
0 __schedule>find_proxy_task lock 1 0
0 __schedule>find_proxy_task read task 2 blocked_on 1
0 __schedule>find_proxy_task lock 3 1
0 __schedule>find_proxy_task read task 1 on_rq 0
0 __schedule>find_proxy_task>proxy_enqueue_on_owner write task 2 sleeping_owner 1
0 __schedule>find_proxy_task>proxy_enqueue_on_owner write task 1 blocked_head 2
0 __schedule>find_proxy_task unlock 3 1
2 sched_ttwu_pending read task 1 wake_entry 2
2 sched_ttwu_pending>ttwu_do_activate>activate_task lock 3 1
2 sched_ttwu_pending>ttwu_do_activate>activate_task write task 1 on_rq 1
2 sched_ttwu_pending>ttwu_do_activate>activate_task unlock 3 1
0 __schedule>find_proxy_task unlock 1 0
3 pick_next_task write task 3 on_rq 0
- audit check 15
`

func f1Failure() Failure {
	return Failure{Invariant: 15, Name: "no-stranded-waiter", Message: "donor-0/2 stranded on the list of owner-0/1, which is awake (on_rq=1)",
		CPU: -1, Task: 2, Tasks: []int32{2, 1}}
}

func lines(ex *Explanation) string {
	var b strings.Builder
	for _, r := range ex.Rows {
		fmt.Fprintf(&b, "CPU%d %s: %s\n", r.CPU, r.Func, strings.Join(r.Lines, "; "))
	}
	return b.String()
}

func TestSliceF1(t *testing.T) {
	text := strings.ReplaceAll(f1, "- audit check", "-1 audit check")
	ex := Analyze(parseScript(t, text).input(f1Failure()), Options{})
	got := lines(ex)
	for _, want := range []string{
		"CPU0 find_proxy_task > proxy_enqueue_on_owner: D0->sleeping_owner = O0",
		"O0->on_rq == 0", // the read the park rested on
		"CPU2 ttwu_do_activate > activate_task: lock O0->blocked_lock; O0->on_rq = 1", // the write that made it stale
		"O0 off cpu2's wake list",  // why CPU2 enqueued O
		"O0 onto cpu2's wake list", // the wake-up that sent O there
		"O0->blocked_head empty",   // the activation pass that missed D
	} {
		if !strings.Contains(got, want) {
			t.Errorf("slice lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "OT0") || strings.Contains(got, "CPU3") {
		t.Errorf("slice keeps the unrelated task on CPU3:\n%s", got)
	}
	if want := []int{0, 1, 2}; fmt.Sprint(ex.CPUs) != fmt.Sprint(want) {
		t.Errorf("columns %v, want %v", ex.CPUs, want)
	}
}

// Without the stale-read rule the race partner is gone: the test above
// must see the difference. (A mutation check of the slicer's rule.)
func TestSliceF1NeedsStaleEdge(t *testing.T) {
	// As invariant 14 (parked-owner) sees it, the owner's on_rq is no
	// field the invariant looks at: only the stale-read edge finds the
	// enqueue on CPU2.
	text := strings.ReplaceAll(f1, "- audit check 15", "-1 audit check 14")
	in := parseScript(t, text).input(Failure{Invariant: 14, Name: "parked-owner", CPU: -1, Task: 2, Tasks: []int32{2, 1, 3}})
	a := newAnalysis(in)
	sl := &slicer{a: a, kept: map[int]keptStep{}, maxDepth: 2}
	sl.run(a.criterion())
	var stale bool
	for i, k := range sl.kept {
		if k.why == whyStale && a.steps[i].Field == trace.FieldOnRQ && a.steps[i].CPU == 2 {
			stale = true
		}
	}
	if !stale {
		t.Fatalf("the enqueue on CPU2 is not kept as the write that made the park's read stale")
	}
}

func TestTextFitsWidth(t *testing.T) {
	text := strings.ReplaceAll(f1, "- audit check", "-1 audit check")
	ex := Analyze(parseScript(t, text).input(f1Failure()), Options{})
	for _, width := range []int{80, 100} {
		var b strings.Builder
		ex.WriteText(&b, width)
		for _, l := range strings.Split(b.String(), "\n") {
			if n := len([]rune(l)); n > width {
				t.Errorf("width %d: line of %d runes: %q", width, n, l)
			}
		}
		if !strings.Contains(b.String(), "CPU0") || !strings.Contains(b.String(), "The kernel promises:") {
			t.Errorf("width %d: no CPU column or verdict:\n%s", width, b.String())
		}
	}
}

func TestMarkdownTable(t *testing.T) {
	text := strings.ReplaceAll(f1, "- audit check", "-1 audit check")
	ex := Analyze(parseScript(t, text).input(f1Failure()), Options{})
	var b strings.Builder
	ex.WriteMarkdown(&b)
	var rows int
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "| ") {
			rows++
			if c := strings.Count(l, " | ") + 1; c != len(ex.CPUs) {
				t.Errorf("row with %d cells, want %d: %q", c, len(ex.CPUs), l)
			}
		}
	}
	if rows != len(ex.Rows)+2 {
		t.Errorf("%d table lines, want %d (a header, its rule and one per step)", rows, len(ex.Rows)+2)
	}
}

func TestMaxRowsCuts(t *testing.T) {
	text := strings.ReplaceAll(f1, "- audit check", "-1 audit check")
	full := Analyze(parseScript(t, text).input(f1Failure()), Options{})
	cut := Analyze(parseScript(t, text).input(f1Failure()), Options{MaxRows: 2})
	if len(cut.Rows) >= len(full.Rows) {
		t.Fatalf("MaxRows 2: %d rows, the full slice has %d", len(cut.Rows), len(full.Rows))
	}
}

func TestTrimPathDropsHelpers(t *testing.T) {
	for in, want := range map[string]string{
		"__schedule>find_proxy_task>raw_spin_rq_lock":    "__schedule>find_proxy_task",
		"__schedule>find_proxy_task":                     "__schedule>find_proxy_task",
		"raw_spin_rq_lock":                               "",
		"try_to_wake_up>__task_rq_lock>raw_spin_rq_lock": "try_to_wake_up",
	} {
		if got := trimPath(in); got != want {
			t.Errorf("trimPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAliases(t *testing.T) {
	n := newAliases(Names{Task: func(id int32) string {
		return map[int32]string{1: "narrow-0/9", 2: "narrow-3/12", 3: "nice-0/4", 4: "writer-6.1/7"}[id]
	}})
	// The first task of a group initial gets it; a later clash takes
	// more letters.
	for _, c := range []struct {
		id   int32
		want string
	}{{1, "N0"}, {2, "N3"}, {3, "NI0"}, {4, "W6.1"}, {-3, "idle2"}, {0, "NULL"}, {1, "N0"}} {
		if got := n.task(c.id); got != c.want {
			t.Errorf("task(%d) = %q, want %q", c.id, got, c.want)
		}
	}
}
