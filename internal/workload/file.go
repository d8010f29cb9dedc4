// # Scenario files
//
// A scenario file is one JSON object in a strict dialect in the spirit of
// rt-app's task files. Unknown keys, duplicate keys, type mismatches and
// anything after the top-level object are errors. Every error is one line,
// "FILE: line N: PATH: message", where PATH is the JSON path of the
// offending value (e.g. groups[0].program[3].lock); syntax errors have no
// PATH.
//
//	{
//	  "name": "two-cpu-inversion",
//	  "cpus": 2,
//	  "mutexes": ["a", "b"],
//	  "groups": [
//	    {"name": "high", "count": 1, "policy": "fifo", "priority": 90, "cpus": "0",
//	     "program": [
//	       {"sleep": "2ms"},
//	       {"lock": "a"}, {"compute": "100us"}, {"unlock": "a"},
//	       {"sleep": "4ms-6ms"},
//	       {"loop": {"to": 1}}
//	     ]},
//	    {"name": "low", "count": 2, "policy": "normal", "priority": 0, "slots": 1,
//	     "program": [
//	       {"lock": "$0"}, {"compute": "2ms"}, {"unlock": "$0"},
//	       {"wake": "high"},
//	       {"wake": {"group": "high", "index": 0}},
//	       {"wake": {"group": "low", "offset": 1}},
//	       {"choose": {"p": 0.5, "to": 0}},
//	       {"affinity": {"cpus": "0-1"}}, {"affinity": {"window": 2}}, {"affinity": {"all": true}},
//	       {"setprio": {"policy": "fifo", "priority": 50}},
//	       {"yield": true}, {"wait": true},
//	       {"loop": {"to": 0, "count": 3}},
//	       {"exit": true}
//	     ]}
//	  ]
//	}
//
// Top-level keys:
//
//   - name: string, optional.
//   - cpus: integer 0..1024, optional; 0 means "from the command line".
//   - mutexes: array of unique, non-empty mutex names (not starting with "$").
//   - groups: non-empty array of task groups.
//   - core_sched: "on" (= "5.14"), "5.14", "v3" or "off": core
//     scheduling for this scenario (--core-sched overrides it).
//   - ww: array of ww classes {"name": C, "wait_die": B, "count": N}: a
//     ww_class (Wait-Die if wait_die is true, else Wound-Wait) and its N
//     ww_mutexes, named C0 .. C(N-1) (mutex names: they must not clash
//     with mutexes).
//   - chain: {"waiter": G, "head": M, "end": N}: measure a chain of locks
//     (the run summary's "chain"): group G's waits for mutex M, and for
//     each of them during which mutex N (the chain's far end) was
//     released, the unwinding: the time from N's last release to the
//     acquisition of M. G names a group, M and N plain mutexes.
//
// Group keys:
//
//   - name: required, unique. A group of count > 1 names its tasks NAME-0,
//     NAME-1, ...
//   - count: number of identical tasks, default 1.
//   - policy: "normal" (default), "fifo", "rr" or "deadline".
//   - priority: the nice value (-20..19) for normal, the rt priority (1..99)
//     for fifo and rr, 0 for deadline; default 0.
//   - runtime, deadline, period: durations, the sched_attr of policy
//     deadline (required but period, which defaults to deadline; runtime
//     <= deadline <= period, period 100us..4.19s). The deadline groups'
//     summed bandwidth (runtime/period) must fit 95% of the machine's CPUs
//     (admission control): the scenario is refused otherwise.
//   - cpus: the tasks' affinity as a cpulist ("0-3,8") or "all"; default all
//     CPUs. It is checked against the machine size when the scenario is
//     planned.
//   - slots: how many distinct mutexes each task draws (in ascending order)
//     for its "$N" locks; at most the number of mutexes.
//   - cookie: the tasks' core-scheduling cookie, an integer >= 0
//     (default 0: untagged); only core scheduling reads it.
//   - ww: the ww class (a name from ww) whose context ww_acquire_init
//     opens; ww_slots: how many of its ww_mutexes each task draws, in a
//     random order, for its "$N" ww locks.
//   - program: non-empty array of instructions, numbered from 0 (the pc).
//
// Each instruction is an object with exactly one key:
//
//   - {"compute": D}, {"sleep": D}: run on the CPU, or sleep, for a duration
//     D: a time.ParseDuration string ("100us", "1.5ms"), "MIN-MAX" for a
//     duration drawn uniformly from [MIN, MAX] ("4ms-6ms"), or a number of
//     nanoseconds.
//   - {"lock": M}, {"unlock": M}: M is a name from mutexes, "$N" for the
//     task's N-th slot (N < slots), or "$self" for mutex number (task index
//     within its group) modulo the number of mutexes.
//   - {"lock_interruptible": M}, {"lock_killable": M}: mutex_lock_interruptible
//     and mutex_lock_killable. A wait ended by a signal (any signal, or
//     SIGKILL for killable) fails with -EINTR and the program goes on after
//     the matching unlock of M, skipping the critical section.
//   - {"signal": T}, {"kill": T}: send the task T (as for wake) a signal
//     with a handler, or SIGKILL (which also ends killable waits; the task
//     exits when it handles it).
//   - {"wake": T}: wake a task. T is a group name (the task of that group
//     with the waker's own index, modulo the group's count), or an object
//     {"group": G, "index": I} (task I of group G) or {"group": G,
//     "offset": K} (the task with the waker's index + K, modulo the count).
//   - {"affinity": {...}}: sched_setaffinity with exactly one of "cpus": a
//     cpulist, "spread": true (one CPU: the task's index in its group,
//     modulo the machine's CPUs), "window": N (a random window of N consecutive CPUs, chosen at
//     run time) or "all": true. An optional target "group" with "index" or
//     "offset", as for wake, applies it to another task; default: self.
//   - {"setprio": {"policy": P, "priority": N}}: sched_setscheduler, with
//     the same optional target as affinity. Policy "deadline" takes
//     "runtime", "deadline" and "period" as a group does; at run time a
//     change that admission control refuses fails (-EBUSY) and changes
//     nothing.
//   - {"loop": {"to": PC, "count": N}}: jump to PC; with a count, N times
//     and then fall through (0 or absent: forever).
//   - {"choose": {"p": X, "to": PC}}: jump to PC with probability X (0..1),
//     else fall through.
//   - {"cookie": N}: prctl(PR_SCHED_CORE) on self: the task's cookie
//     becomes N (0: untagged) at run time.
//   - {"yield": true}, {"wait": true}, {"exit": true}: sched_yield, sleep
//     until woken, do_exit.
//   - {"migrate_disable": true}, {"migrate_enable": true}: a
//     migrate_disable() region (nests); the task stays on its CPU until
//     the matching migrate_enable (a proxy may still move it as a donor).
//   - {"offline": N}, {"online": N}: CPU hotplug: take CPU N down, or bring
//     it back up (a write to /sys/devices/system/cpu/cpuN/online that does
//     not wait for completion). N must be below the machine's CPUs.
//   - {"ww_acquire_init": true}, {"ww_acquire_fini": true}: open and close
//     an acquire context of the group's ww class.
//   - {"ww_lock": {"mutex": M, "retry": PC}} (or "ww_lock_interruptible"):
//     ww_mutex_lock of a ww_mutex (a name, or "$N" for the task's N-th ww
//     slot) with the open context (none: ww_mutex_lock(lock, NULL));
//     -EDEADLK or -EINTR releases the context's ww_mutexes and jumps to
//     PC, where {"ww_lock_slow": true} takes the contended lock.
//   - {"ww_unlock": M}: ww_mutex_unlock.
//
// ParseFile and Parse read this format; Encode writes it, one instruction
// per line, and Parse(Encode(s)) gives back s.
package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/topology"
)

// maxCount bounds a group's count, so that a typo cannot make the planner
// allocate millions of tasks.
const maxCount = 1 << 20

// ParseFile reads and parses a scenario file.
func ParseFile(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return Parse(path, data)
}

// Parse parses a scenario file's contents; name (usually the file's path)
// starts every error message.
func Parse(name string, data []byte) (*Scenario, error) {
	p := &parser{name: name, data: data, lines: map[string]int{}}
	root, err := p.tree()
	if err != nil {
		return nil, err
	}
	s, err := p.scenario(root)
	if err != nil {
		return nil, err
	}
	s.Source = &Source{File: name, Lines: p.lines}
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("%s: %s", name, oneLine(err.Error()))
	}
	return s, nil
}

// ---------------------------------------------------------------------------
// Syntax: a tree of JSON values that remembers where each one starts.

type nodeKind uint8

const (
	kObject nodeKind = iota
	kArray
	kString
	kNumber
	kBool
	kNull
)

var kindNames = [...]string{"an object", "an array", "a string", "a number", "a boolean", "null"}

type node struct {
	kind  nodeKind
	off   int // byte offset of the value's first character
	str   string
	num   json.Number
	b     bool
	mems  []member // kObject, in file order
	elems []*node  // kArray
}

type member struct {
	key string
	off int // byte offset of the key
	val *node
}

type parser struct {
	name  string
	data  []byte
	dec   *json.Decoder
	lines map[string]int // JSON path -> line, for Plan's errors (Source)
}

// tree checks the syntax and builds the value tree.
func (p *parser) tree() (*node, error) {
	// The first pass finds syntax errors with absolute offsets (the
	// Decoder's token stream reports some offsets relative to the
	// current value) and data after the top-level value.
	dec := json.NewDecoder(bytes.NewReader(p.data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file (want a JSON object)", p.name)
		}
		var se *json.SyntaxError
		if errors.As(json.Unmarshal(p.data, &raw), &se) {
			return nil, p.errAt(int(se.Offset)-1, "", "syntax error: %s", se.Error())
		}
		return nil, fmt.Errorf("%s: syntax error: %s", p.name, oneLine(err.Error()))
	}
	if rest := p.skip(int(dec.InputOffset())); rest < len(p.data) {
		return nil, p.errAt(rest, "", "unexpected data after the top-level object")
	}

	p.dec = json.NewDecoder(bytes.NewReader(p.data))
	p.dec.UseNumber()
	root, err := p.value("")
	if err != nil {
		return nil, err
	}
	if root.kind != kObject {
		return nil, p.errAt(root.off, "", "want a JSON object at the top level, got %s", kindNames[root.kind])
	}
	return root, nil
}

// skip returns the offset of the first byte at or after off that is not
// white space or a separator.
func (p *parser) skip(off int) int {
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

func (p *parser) token() (json.Token, int, error) {
	off := p.skip(int(p.dec.InputOffset()))
	tok, err := p.dec.Token()
	if err != nil {
		return nil, off, p.errAt(off, "", "syntax error: %v", err)
	}
	return tok, off, nil
}

func (p *parser) value(path string) (*node, error) {
	tok, off, err := p.token()
	if err != nil {
		return nil, err
	}
	n := &node{off: off}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.kind = kObject
			keys := map[string]bool{}
			for p.dec.More() {
				ktok, koff, err := p.token()
				if err != nil {
					return nil, err
				}
				key, ok := ktok.(string)
				if !ok {
					return nil, p.errAt(koff, path, "object key is not a string")
				}
				if keys[key] {
					return nil, p.errAt(koff, path, "duplicate key %q", key)
				}
				keys[key] = true
				v, err := p.value(joinPath(path, key))
				if err != nil {
					return nil, err
				}
				n.mems = append(n.mems, member{key: key, off: koff, val: v})
			}
		case '[':
			n.kind = kArray
			for p.dec.More() {
				v, err := p.value(fmt.Sprintf("%s[%d]", path, len(n.elems)))
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
		default:
			return nil, p.errAt(off, path, "syntax error: unexpected %q", string(t))
		}
		if _, _, err := p.token(); err != nil { // the closing delimiter
			return nil, err
		}
	case string:
		n.kind, n.str = kString, t
	case json.Number:
		n.kind, n.num = kNumber, t
	case bool:
		n.kind, n.b = kBool, t
	case nil:
		n.kind = kNull
	default:
		return nil, p.errAt(off, path, "syntax error: unexpected token %v", tok)
	}
	return n, nil
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// ---------------------------------------------------------------------------
// Errors.

// line returns the 1-based line of byte offset off.
func (p *parser) line(off int) int {
	off = min(max(off, 0), len(p.data))
	return 1 + bytes.Count(p.data[:off], []byte{'\n'})
}

// errAt formats "NAME: line N: PATH: message".
func (p *parser) errAt(off int, path, format string, args ...any) error {
	msg := oneLine(fmt.Sprintf(format, args...))
	if path != "" {
		msg = path + ": " + msg
	}
	return fmt.Errorf("%s: line %d: %s", p.name, p.line(off), msg)
}

func (p *parser) errf(n *node, path, format string, args ...any) error {
	return p.errAt(n.off, path, format, args...)
}

func oneLine(s string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

// ---------------------------------------------------------------------------
// Typed access to the tree.

// fields checks that n is an object whose keys are all in allowed and
// returns its members by key.
func (p *parser) fields(n *node, path string, allowed ...string) (map[string]*member, error) {
	if n.kind != kObject {
		return nil, p.errf(n, path, "want an object, got %s", kindNames[n.kind])
	}
	out := make(map[string]*member, len(n.mems))
	for i := range n.mems {
		m := &n.mems[i]
		ok := false
		for _, a := range allowed {
			ok = ok || a == m.key
		}
		if !ok {
			return nil, p.errAt(m.off, path, "unknown key %q (want one of %s)", m.key, strings.Join(allowed, ", "))
		}
		out[m.key] = m
	}
	return out, nil
}

func (p *parser) str(n *node, path string) (string, error) {
	if n.kind != kString {
		return "", p.errf(n, path, "want a string, got %s", kindNames[n.kind])
	}
	return n.str, nil
}

func (p *parser) int(n *node, path string) (int, error) {
	if n.kind != kNumber {
		return 0, p.errf(n, path, "want an integer, got %s", kindNames[n.kind])
	}
	v, err := strconv.ParseInt(string(n.num), 10, strconv.IntSize)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(n.num), 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, p.errf(n, path, "want an integer, got %s", n.num)
		}
		v = int64(f)
	}
	return int(v), nil
}

func (p *parser) float(n *node, path string) (float64, error) {
	if n.kind != kNumber {
		return 0, p.errf(n, path, "want a number, got %s", kindNames[n.kind])
	}
	f, err := strconv.ParseFloat(string(n.num), 64)
	if err != nil {
		return 0, p.errf(n, path, "bad number %s", n.num)
	}
	return f, nil
}

func (p *parser) array(n *node, path string) ([]*node, error) {
	if n.kind != kArray {
		return nil, p.errf(n, path, "want an array, got %s", kindNames[n.kind])
	}
	return n.elems, nil
}

func (p *parser) isTrue(n *node, path string) error {
	if n.kind != kBool {
		return p.errf(n, path, "want true, got %s", kindNames[n.kind])
	}
	if !n.b {
		return p.errf(n, path, "must be true")
	}
	return nil
}

func (p *parser) policy(n *node, path string) (task.Policy, error) {
	s, err := p.str(n, path)
	if err != nil {
		return 0, err
	}
	switch s {
	case "normal":
		return task.Normal, nil
	case "fifo":
		return task.FIFO, nil
	case "rr":
		return task.RR, nil
	case "deadline":
		return task.Deadline, nil
	}
	return 0, p.errf(n, path, "unknown policy %q (want normal, fifo, rr or deadline)", s)
}

// dlParams reads a SCHED_DEADLINE sched_attr from the keys runtime,
// deadline and period of f (durations; period defaults to deadline) and
// checks it as __checkparam_dl does. For any other policy the keys must
// be absent.
func (p *parser) dlParams(n *node, f map[string]*member, path string, pol task.Policy) (task.DLParams, error) {
	var a task.DLParams
	if pol != task.Deadline {
		for _, k := range []string{"runtime", "deadline", "period"} {
			if m := f[k]; m != nil {
				return a, p.errf(m.val, path+"."+k, "%q is for policy deadline only", k)
			}
		}
		return a, nil
	}
	for _, k := range []struct {
		name string
		dst  *int64
		req  bool
	}{{"runtime", &a.Runtime, true}, {"deadline", &a.Deadline, true}, {"period", &a.Period, false}} {
		m := f[k.name]
		if m == nil {
			if k.req {
				return a, p.errf(n, path, "policy deadline needs key %q", k.name)
			}
			continue
		}
		lo, hi, err := p.duration(m.val, path+"."+k.name)
		if err != nil {
			return a, err
		}
		if hi != 0 {
			return a, p.errf(m.val, path+"."+k.name, "a fixed duration, not a range")
		}
		*k.dst = lo
	}
	if why := task.CheckDLParams(a); why != "" {
		return a, p.errf(n, path, "sched_setattr: %s (-EINVAL)", why)
	}
	if a.Period == 0 {
		a.Period = a.Deadline
	}
	return a, nil
}

func (p *parser) checkPrio(n *node, path string, pol task.Policy, prio int) error {
	if pol == task.Deadline {
		if prio != 0 {
			return p.errf(n, path, "priority %d for policy deadline (sched_priority must be 0)", prio)
		}
		return nil
	}
	if pol == task.Normal {
		if prio < -20 || prio > 19 {
			return p.errf(n, path, "nice %d out of range -20..19 for policy normal", prio)
		}
	} else if prio < 1 || prio > 99 {
		return p.errf(n, path, "rt priority %d out of range 1..99 for policy %s", prio, pol)
	}
	return nil
}

// duration parses "100us", "4ms-6ms" or a number of nanoseconds.
func (p *parser) duration(n *node, path string) (lo, hi int64, err error) {
	switch n.kind {
	case kNumber:
		v, err := p.int(n, path)
		if err != nil {
			return 0, 0, err
		}
		if v < 0 {
			return 0, 0, p.errf(n, path, "negative duration %d", v)
		}
		return int64(v), 0, nil
	case kString:
	default:
		return 0, 0, p.errf(n, path, "want a duration string (\"100us\", \"1ms-2ms\") or a number of nanoseconds, got %s", kindNames[n.kind])
	}
	one := func(s string) (int64, error) {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return 0, p.errf(n, path, "bad duration %q (want e.g. \"100us\", \"1.5ms\" or \"1ms-2ms\")", n.str)
		}
		if d < 0 {
			return 0, p.errf(n, path, "negative duration %q", n.str)
		}
		return int64(d), nil
	}
	a, b, isRange := strings.Cut(n.str, "-")
	if !isRange || strings.TrimSpace(a) == "" {
		lo, err := one(n.str)
		return lo, 0, err
	}
	if lo, err = one(a); err != nil {
		return 0, 0, err
	}
	if hi, err = one(b); err != nil {
		return 0, 0, err
	}
	if lo > hi {
		return 0, 0, p.errf(n, path, "bad range %q: MIN %v greater than MAX %v", n.str, time.Duration(lo), time.Duration(hi))
	}
	return lo, hi, nil
}

// ---------------------------------------------------------------------------
// Semantics.

// groupHead is what the first pass learns about a group.
type groupHead struct {
	prog []*node
	path string
}

type scope struct {
	s       *Scenario
	mutexes map[string]int
	groups  map[string]int
	ww      map[string]int  // ww class name -> Scenario.WW index
	hasWW   map[string]bool // groups with a "ww" key
}

func (p *parser) scenario(root *node) (*Scenario, error) {
	f, err := p.fields(root, "", "name", "cpus", "topology", "core_sched", "mutexes", "ww", "chain", "groups")
	if err != nil {
		return nil, err
	}
	s := &Scenario{}
	sc := &scope{s: s, mutexes: map[string]int{}, groups: map[string]int{}, hasWW: map[string]bool{}}
	if m := f["name"]; m != nil {
		if s.Name, err = p.str(m.val, "name"); err != nil {
			return nil, err
		}
	}
	if m := f["cpus"]; m != nil {
		if s.CPUs, err = p.int(m.val, "cpus"); err != nil {
			return nil, err
		}
		if s.CPUs < 0 || s.CPUs > task.MaxCPUs {
			return nil, p.errf(m.val, "cpus", "%d out of range 0..%d", s.CPUs, task.MaxCPUs)
		}
	}
	if m := f["topology"]; m != nil {
		if s.Topology, err = p.str(m.val, "topology"); err != nil {
			return nil, err
		}
		tp, err := topology.Parse(s.Topology)
		if err != nil {
			return nil, p.errf(m.val, "topology", "%v", err)
		}
		if s.CPUs != 0 && s.CPUs != tp.NumCPUs() {
			return nil, p.errf(m.val, "topology", "%s has %d CPUs, but cpus is %d", tp, tp.NumCPUs(), s.CPUs)
		}
	}
	if m := f["core_sched"]; m != nil {
		if s.CoreSched, err = p.str(m.val, "core_sched"); err != nil {
			return nil, err
		}
		switch s.CoreSched {
		case "on", "5.14", "v3", "off":
		default:
			return nil, p.errf(m.val, "core_sched", "%q: want on, 5.14, v3 or off", s.CoreSched)
		}
	}
	if m := f["mutexes"]; m != nil {
		elems, err := p.array(m.val, "mutexes")
		if err != nil {
			return nil, err
		}
		for i, e := range elems {
			path := fmt.Sprintf("mutexes[%d]", i)
			name, err := p.str(e, path)
			if err != nil {
				return nil, err
			}
			switch {
			case name == "":
				return nil, p.errf(e, path, "empty mutex name")
			case strings.HasPrefix(name, "$"):
				return nil, p.errf(e, path, "mutex name %q starts with $ (reserved for slots and $self)", name)
			}
			if j, dup := sc.mutexes[name]; dup {
				return nil, p.errf(e, path, "duplicate mutex %q (also mutexes[%d])", name, j)
			}
			sc.mutexes[name] = i
			s.Mutexes = append(s.Mutexes, name)
		}
	}
	if m := f["ww"]; m != nil {
		if err := p.wwClasses(sc, m.val); err != nil {
			return nil, err
		}
	}
	m := f["groups"]
	if m == nil {
		return nil, p.errf(root, "", "missing key \"groups\"")
	}
	elems, err := p.array(m.val, "groups")
	if err != nil {
		return nil, err
	}
	if len(elems) == 0 {
		return nil, p.errf(m.val, "groups", "empty (want at least one group)")
	}
	heads := make([]groupHead, len(elems))
	s.Groups = make([]Group, len(elems))
	for i, e := range elems {
		path := fmt.Sprintf("groups[%d]", i)
		if err := p.group(sc, e, path, &s.Groups[i], &heads[i]); err != nil {
			return nil, err
		}
		sc.groups[s.Groups[i].Name] = i
	}
	for i := range s.Groups {
		g := &s.Groups[i]
		g.Program = make([]Op, len(heads[i].prog))
		for k, e := range heads[i].prog {
			path := fmt.Sprintf("%s.program[%d]", heads[i].path, k)
			if err := p.instruction(sc, g, e, path, &g.Program[k]); err != nil {
				return nil, err
			}
		}
	}
	if m := f["chain"]; m != nil {
		if s.Chain, err = p.chain(sc, m.val); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// chain reads the top-level "chain": a group and two plain mutexes.
func (p *parser) chain(sc *scope, n *node) (*Chain, error) {
	f, err := p.fields(n, "chain", "waiter", "head", "end")
	if err != nil {
		return nil, err
	}
	name := func(key string) (*node, string, error) {
		m := f[key]
		if m == nil {
			return nil, "", p.errf(n, "chain", "missing key %q", key)
		}
		v, err := p.str(m.val, "chain."+key)
		return m.val, v, err
	}
	c := &Chain{}
	v, g, err := name("waiter")
	if err != nil {
		return nil, err
	}
	var ok bool
	if c.Waiter, ok = sc.groups[g]; !ok {
		return nil, p.errf(v, "chain.waiter", "no group %q", g)
	}
	for _, k := range []struct {
		key string
		to  *int
	}{{"head", &c.Head}, {"end", &c.End}} {
		v, mx, err := name(k.key)
		if err != nil {
			return nil, err
		}
		if *k.to, ok = sc.mutexes[mx]; !ok {
			return nil, p.errf(v, "chain."+k.key, "no mutex %q (a chain is made of plain mutexes)", mx)
		}
	}
	if c.Head == c.End {
		return nil, p.errf(n, "chain", "head and end are the same mutex")
	}
	return c, nil
}

func (p *parser) group(sc *scope, n *node, path string, g *Group, h *groupHead) error {
	f, err := p.fields(n, path, "name", "count", "policy", "priority", "runtime", "deadline", "period", "cpus", "slots", "cookie", "ww", "ww_slots", "program")
	if err != nil {
		return err
	}
	h.path = path
	p.lines[path] = p.line(n.off)
	m := f["name"]
	if m == nil {
		return p.errf(n, path, "missing key \"name\"")
	}
	if g.Name, err = p.str(m.val, path+".name"); err != nil {
		return err
	}
	if g.Name == "" {
		return p.errf(m.val, path+".name", "empty group name")
	}
	if j, dup := sc.groups[g.Name]; dup {
		return p.errf(m.val, path+".name", "duplicate group name %q (also groups[%d])", g.Name, j)
	}
	g.Count = 1
	if m := f["count"]; m != nil {
		if g.Count, err = p.int(m.val, path+".count"); err != nil {
			return err
		}
		if g.Count < 1 || g.Count > maxCount {
			return p.errf(m.val, path+".count", "%d out of range 1..%d", g.Count, maxCount)
		}
	}
	g.Policy = task.Normal
	if m := f["policy"]; m != nil {
		if g.Policy, err = p.policy(m.val, path+".policy"); err != nil {
			return err
		}
	}
	prioNode := n
	if m := f["priority"]; m != nil {
		prioNode = m.val
		if g.Prio, err = p.int(m.val, path+".priority"); err != nil {
			return err
		}
	}
	if err := p.checkPrio(prioNode, path+".priority", g.Policy, g.Prio); err != nil {
		return err
	}
	if g.DL, err = p.dlParams(n, f, path, g.Policy); err != nil {
		return err
	}
	if m := f["cpus"]; m != nil {
		p.lines[path+".cpus"] = p.line(m.val.off)
		if g.CPUs, err = p.str(m.val, path+".cpus"); err != nil {
			return err
		}
		if _, err := task.ParseMask(g.CPUs, task.MaxCPUs); err != nil {
			return p.errf(m.val, path+".cpus", "%v", err)
		}
	}
	if m := f["slots"]; m != nil {
		if g.Slots, err = p.int(m.val, path+".slots"); err != nil {
			return err
		}
		if g.Slots < 0 || g.Slots > len(sc.s.Mutexes) {
			return p.errf(m.val, path+".slots", "%d slots out of range 0..%d (the number of mutexes)", g.Slots, len(sc.s.Mutexes))
		}
	}
	if m := f["cookie"]; m != nil {
		ck, err := p.int(m.val, path+".cookie")
		if err != nil {
			return err
		}
		if ck < 0 {
			return p.errf(m.val, path+".cookie", "negative cookie %d", ck)
		}
		g.Cookie = uint64(ck)
	}
	if m := f["ww"]; m != nil {
		name, err := p.str(m.val, path+".ww")
		if err != nil {
			return err
		}
		k, ok := sc.ww[name]
		if !ok {
			return p.errf(m.val, path+".ww", "unknown ww class %q", name)
		}
		g.WWSet = k
		sc.hasWW[g.Name] = true
	}
	if m := f["ww_slots"]; m != nil {
		if g.WWSlots, err = p.int(m.val, path+".ww_slots"); err != nil {
			return err
		}
		if !sc.hasWW[g.Name] {
			return p.errf(m.val, path+".ww_slots", "ww_slots without a ww class")
		}
		if max := sc.s.WW[g.WWSet].Count; g.WWSlots < 0 || g.WWSlots > max {
			return p.errf(m.val, path+".ww_slots", "%d ww slots out of range 0..%d (the class's ww_mutexes)", g.WWSlots, max)
		}
	}
	m = f["program"]
	if m == nil {
		return p.errf(n, path, "missing key \"program\"")
	}
	if h.prog, err = p.array(m.val, path+".program"); err != nil {
		return err
	}
	if len(h.prog) == 0 {
		return p.errf(m.val, path+".program", "empty program")
	}
	return nil
}

var instructionNames = func() string {
	var b strings.Builder
	for k := task.OpKind(0); k < task.NumOps; k++ {
		if k == task.OpSys {
			continue // built-in benchmark code only
		}
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k.String())
	}
	b.WriteString(", lock_interruptible, lock_killable, ww_lock_interruptible")
	return b.String()
}()

func (p *parser) instruction(sc *scope, g *Group, n *node, path string, op *Op) error {
	p.lines[path] = p.line(n.off)
	if n.kind != kObject {
		return p.errf(n, path, "want an instruction object like {\"compute\": \"1ms\"}, got %s", kindNames[n.kind])
	}
	switch len(n.mems) {
	case 0:
		return p.errf(n, path, "empty instruction (want exactly one key, one of %s)", instructionNames)
	case 1:
	default:
		return p.errAt(n.mems[1].off, path, "two keys %q and %q in one instruction (want exactly one)", n.mems[0].key, n.mems[1].key)
	}
	m := n.mems[0]
	kind, mode, ok := task.ParseOpName(m.key)
	if !ok {
		return p.errAt(m.off, path, "unknown instruction %q (want one of %s)", m.key, instructionNames)
	}
	*op = Op{Op: task.Op{Kind: kind, LockMode: mode}, TargetGroup: -1}
	v := m.val
	path = path + "." + m.key
	var err error
	switch kind {
	case task.OpCompute, task.OpSleep:
		op.Min, op.Max, err = p.duration(v, path)
		return err

	case task.OpLock, task.OpUnlock:
		name, err := p.str(v, path)
		if err != nil {
			return err
		}
		switch {
		case name == "$self":
			if len(sc.s.Mutexes) == 0 {
				return p.errf(v, path, "$self but the scenario has no mutexes")
			}
			op.MutexMode = MutexByIndex
		case strings.HasPrefix(name, "$"):
			digits := name[1:]
			slot, err := strconv.Atoi(digits)
			if err != nil || digits == "" || strings.Trim(digits, "0123456789") != "" {
				return p.errf(v, path, "bad mutex slot %q (want $0, $1, ... or $self)", name)
			}
			if slot >= g.Slots {
				return p.errf(v, path, "slot %s out of range: group %q has %d slots", name, g.Name, g.Slots)
			}
			op.MutexMode, op.Mutex = MutexSlot, slot
		default:
			idx, ok := sc.mutexes[name]
			if !ok {
				return p.errf(v, path, "unknown mutex %q (declared: %s)", name, strings.Join(sc.s.Mutexes, ", "))
			}
			op.MutexMode, op.Mutex = MutexFixed, idx
		}
		return nil

	case task.OpWake, task.OpSignal, task.OpKill:
		if v.kind == kString {
			gi, ok := sc.groups[v.str]
			if !ok {
				return p.errf(v, path, "unknown group %q", v.str)
			}
			op.TargetGroup, op.TargetIndex = gi, Self
			return nil
		}
		f, err := p.fields(v, path, "group", "index", "offset")
		if err != nil {
			return err
		}
		if f["group"] == nil {
			return p.errf(v, path, "missing key \"group\"")
		}
		return p.target(sc, f, path, op)

	case task.OpAffinity:
		f, err := p.fields(v, path, "cpus", "window", "all", "spread", "group", "index", "offset")
		if err != nil {
			return err
		}
		var set []string
		for _, k := range []string{"cpus", "window", "all", "spread"} {
			if f[k] != nil {
				set = append(set, k)
			}
		}
		if len(set) != 1 {
			return p.errf(v, path, "want exactly one of cpus, window, all, spread (got %d)", len(set))
		}
		switch set[0] {
		case "cpus":
			s, err := p.str(f["cpus"].val, path+".cpus")
			if err != nil {
				return err
			}
			if op.Mask, err = task.ParseMask(s, task.MaxCPUs); err != nil {
				return p.errf(f["cpus"].val, path+".cpus", "%v", err)
			}
		case "window":
			if op.Count, err = p.int(f["window"].val, path+".window"); err != nil {
				return err
			}
			if op.Count < 1 || op.Count > task.MaxCPUs {
				return p.errf(f["window"].val, path+".window", "%d out of range 1..%d", op.Count, task.MaxCPUs)
			}
		case "all":
			if err := p.isTrue(f["all"].val, path+".all"); err != nil {
				return err
			}
			op.Count = -1
		case "spread":
			if err := p.isTrue(f["spread"].val, path+".spread"); err != nil {
				return err
			}
			op.Count = AffinitySpread
		}
		return p.target(sc, f, path, op)

	case task.OpSetPrio:
		f, err := p.fields(v, path, "policy", "priority", "runtime", "deadline", "period", "group", "index", "offset")
		if err != nil {
			return err
		}
		if f["policy"] == nil {
			return p.errf(v, path, "missing key \"policy\"")
		}
		if op.Policy, err = p.policy(f["policy"].val, path+".policy"); err != nil {
			return err
		}
		prioNode := v
		if m := f["priority"]; m != nil {
			prioNode = m.val
			if op.Prio, err = p.int(m.val, path+".priority"); err != nil {
				return err
			}
		}
		if err := p.checkPrio(prioNode, path+".priority", op.Policy, op.Prio); err != nil {
			return err
		}
		if op.DL, err = p.dlParams(v, f, path, op.Policy); err != nil {
			return err
		}
		return p.target(sc, f, path, op)

	case task.OpLoop:
		f, err := p.fields(v, path, "to", "count")
		if err != nil {
			return err
		}
		if op.Jump, err = p.jump(g, v, f, path); err != nil {
			return err
		}
		if m := f["count"]; m != nil {
			if op.Count, err = p.int(m.val, path+".count"); err != nil {
				return err
			}
			if op.Count < 0 {
				return p.errf(m.val, path+".count", "negative count %d (0 or absent: forever)", op.Count)
			}
		}
		return nil

	case task.OpChoose:
		f, err := p.fields(v, path, "p", "to")
		if err != nil {
			return err
		}
		m := f["p"]
		if m == nil {
			return p.errf(v, path, "missing key \"p\"")
		}
		if op.Prob, err = p.float(m.val, path+".p"); err != nil {
			return err
		}
		if !(op.Prob >= 0 && op.Prob <= 1) {
			return p.errf(m.val, path+".p", "probability %v out of range 0..1", op.Prob)
		}
		op.Jump, err = p.jump(g, v, f, path)
		return err

	case task.OpYield, task.OpWait, task.OpExit, task.OpMigrateDisable, task.OpMigrateEnable, task.OpWWLockSlow, task.OpWWFini:
		return p.isTrue(v, path)

	case task.OpCPUOffline, task.OpCPUOnline:
		if op.CPU, err = p.int(v, path); err != nil {
			return err
		}
		if op.CPU < 0 || op.CPU >= task.MaxCPUs {
			return p.errf(v, path, "cpu %d out of range 0..%d", op.CPU, task.MaxCPUs-1)
		}
		return nil
	case task.OpWWInit:
		if !sc.hasWW[g.Name] {
			return p.errf(v, path, "group %q has no ww class (\"ww\")", g.Name)
		}
		return p.isTrue(v, path) // Plan sets the class: the group's

	case task.OpWWLock:
		f, err := p.fields(v, path, "mutex", "retry")
		if err != nil {
			return err
		}
		m := f["mutex"]
		if m == nil {
			return p.errf(v, path, "missing key \"mutex\"")
		}
		if err := p.wwMutex(sc, g, m.val, path+".mutex", op); err != nil {
			return err
		}
		r := f["retry"]
		if r == nil {
			return p.errf(v, path, "missing key \"retry\"")
		}
		op.Jump, err = p.jump(g, v, map[string]*member{"to": r}, path)
		return err

	case task.OpWWUnlock:
		return p.wwMutex(sc, g, v, path, op)

	case task.OpCookie:
		if op.Prio, err = p.int(v, path); err != nil {
			return err
		}
		if op.Prio < 0 {
			return p.errf(v, path, "negative cookie %d", op.Prio)
		}
		return nil
	}
	return p.errf(v, path, "instruction %s not supported in scenario files", kind)
}

// wwClasses reads the top-level "ww" list: classes and their ww_mutexes,
// named after the class, indexed after the plain mutexes.
func (p *parser) wwClasses(sc *scope, n *node) error {
	elems, err := p.array(n, "ww")
	if err != nil {
		return err
	}
	sc.ww = map[string]int{}
	next := len(sc.s.Mutexes)
	for i, e := range elems {
		path := fmt.Sprintf("ww[%d]", i)
		f, err := p.fields(e, path, "name", "wait_die", "count")
		if err != nil {
			return err
		}
		var w WWSet
		m := f["name"]
		if m == nil {
			return p.errf(e, path, "missing key \"name\"")
		}
		if w.Name, err = p.str(m.val, path+".name"); err != nil {
			return err
		}
		if w.Name == "" || strings.HasPrefix(w.Name, "$") {
			return p.errf(m.val, path+".name", "bad ww class name %q", w.Name)
		}
		if _, dup := sc.ww[w.Name]; dup {
			return p.errf(m.val, path+".name", "duplicate ww class %q", w.Name)
		}
		if m := f["wait_die"]; m != nil {
			if m.val.kind != kBool {
				return p.errf(m.val, path+".wait_die", "want true or false, got %s", kindNames[m.val.kind])
			}
			w.WaitDie = m.val.b
		}
		m = f["count"]
		if m == nil {
			return p.errf(e, path, "missing key \"count\"")
		}
		if w.Count, err = p.int(m.val, path+".count"); err != nil {
			return err
		}
		if w.Count < 1 || w.Count > maxCount {
			return p.errf(m.val, path+".count", "%d out of range 1..%d", w.Count, maxCount)
		}
		for j := 0; j < w.Count; j++ {
			name := fmt.Sprintf("%s%d", w.Name, j)
			if _, dup := sc.mutexes[name]; dup {
				return p.errf(m.val, path, "ww_mutex %q clashes with another mutex name", name)
			}
			sc.mutexes[name] = next
			next++
		}
		sc.ww[w.Name] = len(sc.s.WW)
		sc.s.WW = append(sc.s.WW, w)
	}
	return nil
}

// wwMutex reads the ww_mutex of ww_lock and ww_unlock: a ww_mutex name or
// "$N", the task's N-th ww slot.
func (p *parser) wwMutex(sc *scope, g *Group, v *node, path string, op *Op) error {
	name, err := p.str(v, path)
	if err != nil {
		return err
	}
	if strings.HasPrefix(name, "$") {
		digits := name[1:]
		slot, err := strconv.Atoi(digits)
		if err != nil || digits == "" || strings.Trim(digits, "0123456789") != "" {
			return p.errf(v, path, "bad ww slot %q (want $0, $1, ...)", name)
		}
		if slot >= g.WWSlots {
			return p.errf(v, path, "ww slot %s out of range: group %q has %d ww slots", name, g.Name, g.WWSlots)
		}
		op.MutexMode, op.Mutex = MutexWWSlot, slot
		return nil
	}
	idx, ok := sc.mutexes[name]
	if !ok || idx < len(sc.s.Mutexes) {
		return p.errf(v, path, "%q is not a ww_mutex (they are named after their ww class: C0, C1, ...)", name)
	}
	op.MutexMode, op.Mutex = MutexFixed, idx
	return nil
}

// jump reads a required "to" and checks it against the program's length.
func (p *parser) jump(g *Group, v *node, f map[string]*member, path string) (int, error) {
	m := f["to"]
	if m == nil {
		return 0, p.errf(v, path, "missing key \"to\"")
	}
	to, err := p.int(m.val, path+".to")
	if err != nil {
		return 0, err
	}
	if to < 0 || to >= len(g.Program) {
		return 0, p.errf(m.val, path+".to", "jump target %d out of range 0..%d", to, len(g.Program)-1)
	}
	return to, nil
}

// target reads the optional "group" with "index" or "offset" of wake,
// affinity and setprio.
func (p *parser) target(sc *scope, f map[string]*member, path string, op *Op) error {
	gm, im, om := f["group"], f["index"], f["offset"]
	if gm == nil {
		if im != nil {
			return p.errAt(im.off, path, "index without group")
		}
		if om != nil {
			return p.errAt(om.off, path, "offset without group")
		}
		return nil
	}
	name, err := p.str(gm.val, path+".group")
	if err != nil {
		return err
	}
	gi, ok := sc.groups[name]
	if !ok {
		return p.errf(gm.val, path+".group", "unknown group %q", name)
	}
	op.TargetGroup, op.TargetIndex = gi, Self
	switch {
	case im != nil && om != nil:
		return p.errAt(om.off, path, "both index and offset (want at most one)")
	case im != nil:
		idx, err := p.int(im.val, path+".index")
		if err != nil {
			return err
		}
		if n := sc.s.Groups[gi].Count; idx < 0 || idx >= n {
			return p.errf(im.val, path+".index", "task %d out of range 0..%d of group %q", idx, n-1, name)
		}
		op.TargetIndex = idx
	case om != nil:
		off, err := p.int(om.val, path+".offset")
		if err != nil {
			return err
		}
		if off < 0 {
			return p.errf(om.val, path+".offset", "negative offset %d", off)
		}
		op.TargetOffset = off
	}
	return nil
}

// ---------------------------------------------------------------------------
// Encoding.

// Encode writes s in the scenario-file format: indented JSON with one
// instruction per line. It fails if s cannot be represented or would not
// parse back.
func Encode(s *Scenario) ([]byte, error) {
	if s == nil {
		return nil, errors.New("workload: encode: nil scenario")
	}
	var b bytes.Buffer
	b.WriteString("{\n")
	var top []string
	if s.Name != "" {
		top = append(top, `  "name": `+jstr(s.Name))
	}
	if s.CPUs != 0 {
		top = append(top, `  "cpus": `+strconv.Itoa(s.CPUs))
	}
	if s.Topology != "" {
		top = append(top, `  "topology": `+jstr(s.Topology))
	}
	if s.CoreSched != "" {
		top = append(top, `  "core_sched": `+jstr(s.CoreSched))
	}
	if len(s.Mutexes) > 0 {
		ms := make([]string, len(s.Mutexes))
		for i, m := range s.Mutexes {
			ms[i] = jstr(m)
		}
		top = append(top, `  "mutexes": [`+strings.Join(ms, ", ")+`]`)
	}
	if len(s.WW) > 0 {
		ws := make([]string, len(s.WW))
		for i, w := range s.WW {
			ws[i] = jobj(kv{"name", w.Name}, kv{"wait_die", w.WaitDie}, kv{"count", w.Count})
		}
		top = append(top, `  "ww": [`+strings.Join(ws, ", ")+`]`)
	}
	groups := make([]string, len(s.Groups))
	for gi := range s.Groups {
		g := &s.Groups[gi]
		pol, err := policyName(g.Policy)
		if err != nil {
			return nil, fmt.Errorf("workload: encode: groups[%d] (%s): %v", gi, g.Name, err)
		}
		var gb strings.Builder
		gb.WriteString("    {\n")
		fmt.Fprintf(&gb, "      \"name\": %s,\n", jstr(g.Name))
		fmt.Fprintf(&gb, "      \"count\": %d,\n", g.Count)
		fmt.Fprintf(&gb, "      \"policy\": %q,\n", pol)
		fmt.Fprintf(&gb, "      \"priority\": %d,\n", g.Prio)
		if g.Policy == task.Deadline {
			fmt.Fprintf(&gb, "      \"runtime\": %q,\n      \"deadline\": %q,\n      \"period\": %q,\n", fmtDuration(g.DL.Runtime), fmtDuration(g.DL.Deadline), fmtDuration(g.DL.Period))
		}
		if g.CPUs != "" {
			fmt.Fprintf(&gb, "      \"cpus\": %s,\n", jstr(g.CPUs))
		}
		if g.Slots != 0 {
			fmt.Fprintf(&gb, "      \"slots\": %d,\n", g.Slots)
		}
		if g.Cookie != 0 {
			fmt.Fprintf(&gb, "      \"cookie\": %d,\n", g.Cookie)
		}
		if g.WWSet >= 0 && g.WWSet < len(s.WW) && (g.WWSlots > 0 || usesWWInit(g)) {
			fmt.Fprintf(&gb, "      \"ww\": %s,\n", jstr(s.WW[g.WWSet].Name))
			if g.WWSlots > 0 {
				fmt.Fprintf(&gb, "      \"ww_slots\": %d,\n", g.WWSlots)
			}
		}
		gb.WriteString("      \"program\": [\n")
		for k, op := range g.Program {
			line, err := encodeOp(s, op)
			if err != nil {
				return nil, fmt.Errorf("workload: encode: groups[%d] (%s).program[%d]: %v", gi, g.Name, k, err)
			}
			gb.WriteString("        " + line)
			if k < len(g.Program)-1 {
				gb.WriteByte(',')
			}
			gb.WriteByte('\n')
		}
		gb.WriteString("      ]\n    }")
		groups[gi] = gb.String()
	}
	if c := s.Chain; c != nil {
		if c.Waiter < 0 || c.Waiter >= len(s.Groups) || c.Head < 0 || c.Head >= len(s.Mutexes) || c.End < 0 || c.End >= len(s.Mutexes) {
			return nil, fmt.Errorf("workload: encode: chain %+v out of range", *c)
		}
		top = append(top, `  "chain": `+jobj(kv{"waiter", s.Groups[c.Waiter].Name}, kv{"head", s.Mutexes[c.Head]}, kv{"end", s.Mutexes[c.End]}))
	}
	top = append(top, "  \"groups\": [\n"+strings.Join(groups, ",\n")+"\n  ]")
	b.WriteString(strings.Join(top, ",\n"))
	b.WriteString("\n}\n")
	out := b.Bytes()
	name := s.Name
	if name == "" {
		name = "scenario"
	}
	if _, err := Parse("encoded "+name, out); err != nil {
		return nil, fmt.Errorf("workload: encode: %v", err)
	}
	return out, nil
}

// kv is one key of an encoded object; objects keep their key order.
type kv struct {
	k string
	v any
}

func jobj(kvs ...kv) string {
	parts := make([]string, len(kvs))
	for i, e := range kvs {
		var v string
		switch x := e.v.(type) {
		case string:
			v = jstr(x)
		case rawJSON:
			v = string(x)
		case int:
			v = strconv.Itoa(x)
		case bool:
			v = strconv.FormatBool(x)
		case float64:
			v = strconv.FormatFloat(x, 'g', -1, 64)
		default:
			panic(fmt.Sprintf("jobj: %T", e.v))
		}
		parts[i] = jstr(e.k) + ": " + v
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

type rawJSON string

// jstr quotes s as a JSON string without HTML escaping.
func jstr(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return strconv.Quote(s) // unreachable for strings
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func policyName(p task.Policy) (string, error) {
	switch p {
	case task.Normal, task.FIFO, task.RR, task.Deadline:
		return p.String(), nil
	}
	return "", fmt.Errorf("policy %d not representable (want normal, fifo, rr or deadline)", p)
}

// fmtDuration writes ns so that time.ParseDuration gives it back exactly.
func fmtDuration(ns int64) string {
	return strings.ReplaceAll(time.Duration(ns).String(), "µs", "us")
}

func encodeOp(s *Scenario, op Op) (string, error) {
	if op.Target != 0 {
		return "", fmt.Errorf("absolute target task %d not representable (use TargetGroup)", op.Target)
	}
	if op.Kind == task.OpSys {
		return "", fmt.Errorf("%s: a benchmark's kernel-object instruction, not representable in a scenario file", op.Sys)
	}
	key := op.Op.Name()
	var v any
	switch op.Kind {
	case task.OpCompute, task.OpSleep:
		if op.Max != 0 {
			v = fmtDuration(op.Min) + "-" + fmtDuration(op.Max)
		} else {
			v = fmtDuration(op.Min)
		}
	case task.OpLock, task.OpUnlock:
		switch op.MutexMode {
		case MutexFixed:
			if op.Mutex < 0 || op.Mutex >= len(s.Mutexes) {
				return "", fmt.Errorf("mutex %d out of range (%d mutexes)", op.Mutex, len(s.Mutexes))
			}
			v = s.Mutexes[op.Mutex]
		case MutexSlot:
			v = "$" + strconv.Itoa(op.Mutex)
		case MutexByIndex:
			v = "$self"
		default:
			return "", fmt.Errorf("unknown mutex mode %d", op.MutexMode)
		}
	case task.OpWake, task.OpSignal, task.OpKill:
		if op.TargetGroup < 0 {
			return "", fmt.Errorf("%s without a target group", op.Kind)
		}
		t, err := encodeTarget(s, op)
		if err != nil {
			return "", err
		}
		if op.TargetIndex == Self && op.TargetOffset == 0 {
			v = s.Groups[op.TargetGroup].Name
		} else {
			v = rawJSON(jobj(t...))
		}
	case task.OpAffinity:
		var kvs []kv
		switch {
		case op.Count > 0:
			kvs = append(kvs, kv{"window", op.Count})
		case op.Count == -1:
			kvs = append(kvs, kv{"all", true})
		case op.Count == AffinitySpread:
			kvs = append(kvs, kv{"spread", true})
		case op.Count == 0:
			kvs = append(kvs, kv{"cpus", op.Mask.String()})
		default:
			return "", fmt.Errorf("affinity count %d not representable", op.Count)
		}
		t, err := encodeTarget(s, op)
		if err != nil {
			return "", err
		}
		v = rawJSON(jobj(append(kvs, t...)...))
	case task.OpCookie:
		v = op.Prio
	case task.OpSetPrio:
		pol, err := policyName(op.Policy)
		if err != nil {
			return "", err
		}
		t, err := encodeTarget(s, op)
		if err != nil {
			return "", err
		}
		kvs := []kv{{"policy", pol}, {"priority", op.Prio}}
		if op.Policy == task.Deadline {
			kvs = append(kvs, kv{"runtime", fmtDuration(op.DL.Runtime)}, kv{"deadline", fmtDuration(op.DL.Deadline)}, kv{"period", fmtDuration(op.DL.Period)})
		}
		v = rawJSON(jobj(append(kvs, t...)...))
	case task.OpLoop:
		kvs := []kv{{"to", op.Jump}}
		if op.Count != 0 {
			kvs = append(kvs, kv{"count", op.Count})
		}
		v = rawJSON(jobj(kvs...))
	case task.OpChoose:
		if math.IsNaN(op.Prob) || math.IsInf(op.Prob, 0) {
			return "", fmt.Errorf("probability %v not representable", op.Prob)
		}
		v = rawJSON(jobj(kv{"p", op.Prob}, kv{"to", op.Jump}))
	case task.OpYield, task.OpWait, task.OpExit, task.OpMigrateDisable, task.OpMigrateEnable, task.OpWWInit, task.OpWWLockSlow, task.OpWWFini:
		v = true
	case task.OpCPUOffline, task.OpCPUOnline:
		v = op.CPU
	case task.OpWWLock, task.OpWWUnlock:
		var m any
		switch op.MutexMode {
		case MutexWWSlot:
			m = "$" + strconv.Itoa(op.Mutex)
		case MutexFixed:
			name, ok := wwName(s, op.Mutex)
			if !ok {
				return "", fmt.Errorf("ww_mutex %d out of range", op.Mutex)
			}
			m = name
		default:
			return "", fmt.Errorf("unknown ww mutex mode %d", op.MutexMode)
		}
		if op.Kind == task.OpWWUnlock {
			v = m
		} else {
			v = rawJSON(jobj(kv{"mutex", m}, kv{"retry", op.Jump}))
		}
	default:
		return "", fmt.Errorf("unknown instruction %s", op.Kind)
	}
	return jobj(kv{key, v}), nil
}

// encodeTarget returns the "group" and "index" or "offset" keys of op's
// target, none for self.
func encodeTarget(s *Scenario, op Op) ([]kv, error) {
	if op.TargetGroup < 0 {
		return nil, nil
	}
	if op.TargetGroup >= len(s.Groups) {
		return nil, fmt.Errorf("target group %d out of range (%d groups)", op.TargetGroup, len(s.Groups))
	}
	t := []kv{{"group", s.Groups[op.TargetGroup].Name}}
	switch {
	case op.TargetIndex != Self:
		t = append(t, kv{"index", op.TargetIndex})
	case op.TargetOffset != 0:
		t = append(t, kv{"offset", op.TargetOffset})
	}
	return t, nil
}

// usesWWInit says whether g's program opens an acquire context.
func usesWWInit(g *Group) bool {
	for _, op := range g.Program {
		if op.Kind == task.OpWWInit {
			return true
		}
	}
	return false
}

// wwName is the name of the ww_mutex with index idx.
func wwName(s *Scenario, idx int) (string, bool) {
	k := idx - len(s.Mutexes)
	for _, w := range s.WW {
		if k >= 0 && k < w.Count {
			return fmt.Sprintf("%s%d", w.Name, k), true
		}
		k -= w.Count
	}
	return "", false
}
