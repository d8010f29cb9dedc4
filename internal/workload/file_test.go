package workload

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/task"
)

func TestParseExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Plan(4, 1); err != nil {
				t.Fatalf("Plan(4, 1): %v", err)
			}
			if s.CPUs > 0 {
				if _, err := s.Plan(s.CPUs, 1); err != nil {
					t.Fatalf("Plan(%d, 1): %v", s.CPUs, err)
				}
			}
			// Parse(Encode(s)) == s for files too.
			out, err := Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(f, out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			s.Source, back.Source = nil, nil // where it was read is not its meaning
			if !reflect.DeepEqual(s, back) {
				t.Fatalf("round trip differs:\n%s", out)
			}
		})
	}
}

func TestExampleContents(t *testing.T) {
	inv, err := ParseFile("testdata/inversion.json")
	if err != nil {
		t.Fatal(err)
	}
	if inv.CPUs != 2 || !reflect.DeepEqual(inv.Mutexes, []string{"a"}) {
		t.Errorf("inversion: cpus %d mutexes %v", inv.CPUs, inv.Mutexes)
	}
	type gsum struct {
		name   string
		count  int
		policy task.Policy
		prio   int
	}
	var got []gsum
	for _, g := range inv.Groups {
		got = append(got, gsum{g.Name, g.Count, g.Policy, g.Prio})
	}
	want := []gsum{{"high", 1, task.FIFO, 90}, {"medium", 2, task.FIFO, 50}, {"low", 1, task.Normal, 0}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("inversion groups %+v, want %+v", got, want)
	}

	ch, err := ParseFile("testdata/chain.json")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := ch.Plan(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ch.CPUs != 3 || len(plans) != 3 {
		t.Fatalf("chain: cpus %d, %d tasks", ch.CPUs, len(plans))
	}
	// Every task sits on its own CPU, and A is the only RT task.
	seen := map[int]bool{}
	for _, tp := range plans {
		if tp.Mask.Weight() != 1 {
			t.Errorf("chain: task %s mask %v, want one CPU", tp.Name, tp.Mask)
		}
		seen[tp.Mask.Next(0)] = true
		if rt := tp.Policy.RT(); rt != (tp.Name == "A") {
			t.Errorf("chain: task %s policy %v", tp.Name, tp.Policy)
		}
	}
	if len(seen) != 3 {
		t.Errorf("chain: tasks share CPUs: %v", seen)
	}
}

// TestDocExample checks that the example in the package comment of
// file.go is testdata/features.json.
func TestDocExample(t *testing.T) {
	src, err := os.ReadFile("file.go")
	if err != nil {
		t.Fatal(err)
	}
	var doc []string
	in := false
	for _, l := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(l, "//\t") {
			if in {
				break
			}
			continue
		}
		in = true
		doc = append(doc, strings.TrimPrefix(l, "//\t"))
	}
	file, err := os.ReadFile("testdata/features.json")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(doc, "\n")+"\n", string(file); got != want {
		t.Errorf("doc example differs from testdata/features.json:\n%s", got)
	}
	s, err := Parse("doc", []byte(strings.Join(doc, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	low := s.Groups[1].Program
	if len(low) != 15 {
		t.Fatalf("low has %d instructions", len(low))
	}
	checks := []struct {
		pc   int
		want Op
	}{
		{0, Op{Op: task.Op{Kind: task.OpLock}, TargetGroup: -1, MutexMode: MutexSlot}},
		{3, Op{Op: task.Op{Kind: task.OpWake}, TargetGroup: 0, TargetIndex: Self}},
		{4, Op{Op: task.Op{Kind: task.OpWake}, TargetGroup: 0, TargetIndex: 0}},
		{5, Op{Op: task.Op{Kind: task.OpWake}, TargetGroup: 1, TargetIndex: Self, TargetOffset: 1}},
		{6, Op{Op: task.Op{Kind: task.OpChoose, Prob: 0.5}, TargetGroup: -1}},
		{7, Op{Op: task.Op{Kind: task.OpAffinity, Mask: task.MaskOf(0, 1)}, TargetGroup: -1}},
		{8, Op{Op: task.Op{Kind: task.OpAffinity, Count: 2}, TargetGroup: -1}},
		{9, Op{Op: task.Op{Kind: task.OpAffinity, Count: -1}, TargetGroup: -1}},
		{10, Op{Op: task.Op{Kind: task.OpSetPrio, Policy: task.FIFO, Prio: 50}, TargetGroup: -1}},
		{13, Op{Op: task.Op{Kind: task.OpLoop, Count: 3}, TargetGroup: -1}},
		{14, Op{Op: task.Op{Kind: task.OpExit}, TargetGroup: -1}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(low[c.pc], c.want) {
			t.Errorf("low[%d] = %+v, want %+v", c.pc, low[c.pc], c.want)
		}
	}
	high := s.Groups[0].Program
	if o := high[4].Op; o.Min != 4e6 || o.Max != 6e6 {
		t.Errorf("sleep 4ms-6ms parsed as %d-%d", o.Min, o.Max)
	}
	if o := high[1]; o.MutexMode != MutexFixed || o.Mutex != 0 {
		t.Errorf("lock a parsed as %+v", o)
	}
	if o := high[5].Op; o.Kind != task.OpLoop || o.Jump != 1 || o.Count != 0 {
		t.Errorf("loop parsed as %+v", o)
	}
}

func TestBuiltinRoundTrip(t *testing.T) {
	for _, name := range BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			s, err := Builtin(name, 8, 16)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Encode(s)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(name+".json", out)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			back.Source = nil // where it was read is not its meaning
			if !reflect.DeepEqual(s, back) {
				for gi := range s.Groups {
					if !reflect.DeepEqual(s.Groups[gi], back.Groups[gi]) {
						t.Errorf("group %d:\n got %+v\nwant %+v", gi, back.Groups[gi], s.Groups[gi])
					}
				}
				t.Fatalf("round trip differs:\n%s", out)
			}
		})
	}
}

func TestDurations(t *testing.T) {
	for _, c := range []struct {
		in       string
		min, max int64
	}{
		{`"100us"`, 100 * us, 0},
		{`"100µs"`, 100 * us, 0},
		{`"1.5ms"`, 1500 * us, 0},
		{`"4ms-6ms"`, 4 * ms, 6 * ms},
		{`"4ms - 6ms"`, 4 * ms, 6 * ms},
		{`"5ms-5ms"`, 5 * ms, 5 * ms},
		{`"0s"`, 0, 0},
		{`2500`, 2500, 0},
		{`1e3`, 1000, 0},
		{`"1h2m3.000000004s"`, 3723000000004, 0},
	} {
		src := `{"groups": [{"name": "g", "program": [{"compute": ` + c.in + `}]}]}`
		s, err := Parse("d.json", []byte(src))
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if o := s.Groups[0].Program[0].Op; o.Min != c.min || o.Max != c.max {
			t.Errorf("%s: got %d-%d, want %d-%d", c.in, o.Min, o.Max, c.min, c.max)
		}
	}
	for _, ns := range []int64{0, 1, 999, 1000, 1001, 1500 * us, 59 * 1e9, 61e9 + 7, 1 << 62} {
		if got, err := parseDur(fmtDuration(ns)); err != nil || got != ns {
			t.Errorf("fmtDuration(%d) = %q, parses back as %d, %v", ns, fmtDuration(ns), got, err)
		}
	}
}

func parseDur(s string) (int64, error) {
	src := `{"groups": [{"name": "g", "program": [{"sleep": "` + s + `"}]}]}`
	sc, err := Parse("d.json", []byte(src))
	if err != nil {
		return 0, err
	}
	return sc.Groups[0].Program[0].Min, nil
}

// good is a valid file that the bad cases below break one line at a time.
const good = `{
  "name": "t",
  "mutexes": ["a", "b"],
  "groups": [
    {"name": "g", "count": 2, "policy": "fifo", "priority": 10, "slots": 1,
     "program": [
       {"lock": "$0"},
       {"compute": "1ms"},
       {"unlock": "$0"},
       {"loop": {"to": 0}}
     ]}
  ]
}`

// edit replaces old (which must occur in good) by new.
func edit(old, new string) string {
	if !strings.Contains(good, old) {
		panic("edit: " + old)
	}
	return strings.Replace(good, old, new, 1)
}

func TestParseErrors(t *testing.T) {
	if _, err := Parse("good.json", []byte(good)); err != nil {
		t.Fatalf("base case: %v", err)
	}
	cases := []struct {
		name string
		src  string
		want string
		line int // 0: no line expected
	}{
		{"unknown top-level key", edit(`"name": "t",`, `"name": "t", "cpu": 2,`),
			`unknown key "cpu" (want one of name, cpus, topology, core_sched, mutexes, ww, chain, groups)`, 2},
		{"bad topology", edit(`"name": "t",`, `"name": "t", "topology": "2s-2c",`),
			`topology: topology "2s-2c": want`, 2},
		{"topology and cpus disagree", edit(`"name": "t",`, `"name": "t", "cpus": 4, "topology": "1s-1llc-4c-2t",`),
			`topology: 1s-1llc-4c-2t has 8 CPUs, but cpus is 4`, 2},
		{"unknown group key", edit(`"priority": 10,`, `"priority": 10, "prio": 3,`),
			`groups[0]: unknown key "prio"`, 5},
		{"two keys in one instruction", edit(`{"compute": "1ms"}`, `{"compute": "1ms", "sleep": "1ms"}`),
			`groups[0].program[1]: two keys "compute" and "sleep" in one instruction`, 8},
		{"empty instruction", edit(`{"compute": "1ms"}`, `{}`),
			`groups[0].program[1]: empty instruction`, 8},
		{"unknown instruction", edit(`{"lock": "$0"}`, `{"lok": "$0"}`),
			`groups[0].program[0]: unknown instruction "lok" (want one of compute, lock, unlock, sleep, wait, wake, yield, affinity, setprio, loop, choose, exit, cookie, signal, kill, migrate_disable, migrate_enable, offline, online, ww_acquire_init, ww_lock, ww_lock_slow, ww_unlock, ww_acquire_fini, lock_interruptible, lock_killable, ww_lock_interruptible)`, 7},
		{"bad duration", edit(`"1ms"`, `"1 ms"`),
			`groups[0].program[1].compute: bad duration "1 ms"`, 8},
		{"duration without unit", edit(`"1ms"`, `"100"`),
			`groups[0].program[1].compute: bad duration "100"`, 8},
		{"negative duration", edit(`"1ms"`, `-5`),
			`groups[0].program[1].compute: negative duration`, 8},
		{"min greater than max", edit(`"1ms"`, `"6ms-4ms"`),
			`groups[0].program[1].compute: bad range "6ms-4ms": MIN 6ms greater than MAX 4ms`, 8},
		{"unknown mutex", edit(`{"lock": "$0"}`, `{"lock": "c"}`),
			`groups[0].program[0].lock: unknown mutex "c"`, 7},
		{"slot out of range", edit(`{"lock": "$0"}`, `{"lock": "$1"}`),
			`groups[0].program[0].lock: slot $1 out of range: group "g" has 1 slots`, 7},
		{"bad slot", edit(`{"lock": "$0"}`, `{"lock": "$"}`),
			`groups[0].program[0].lock: bad mutex slot "$"`, 7},
		{"more slots than mutexes", edit(`"slots": 1`, `"slots": 3`),
			`groups[0].slots: 3 slots out of range 0..2`, 5},
		{"jump target out of range", edit(`{"to": 0}`, `{"to": 4}`),
			`groups[0].program[3].loop.to: jump target 4 out of range 0..3`, 10},
		{"negative jump target", edit(`{"loop": {"to": 0}}`, `{"choose": {"p": 0.5, "to": -1}}`),
			`groups[0].program[3].choose.to: jump target -1 out of range 0..3`, 10},
		{"loop without to", edit(`{"to": 0}`, `{"count": 2}`),
			`groups[0].program[3].loop: missing key "to"`, 10},
		{"bad probability", edit(`{"loop": {"to": 0}}`, `{"choose": {"p": 1.5, "to": 0}}`),
			`groups[0].program[3].choose.p: probability 1.5 out of range 0..1`, 10},
		{"bad policy", edit(`"fifo"`, `"sporadic"`),
			`groups[0].policy: unknown policy "sporadic" (want normal, fifo, rr or deadline)`, 5},
		{"deadline with a priority", edit(`"fifo"`, `"deadline", "runtime": "1ms", "deadline": "10ms"`),
			`groups[0].priority: priority 10 for policy deadline (sched_priority must be 0)`, 5},
		{"deadline without runtime", edit(`"policy": "fifo", "priority": 10`, `"policy": "deadline", "deadline": "10ms"`),
			`groups[0]: policy deadline needs key "runtime"`, 5},
		{"deadline runtime above deadline", edit(`"policy": "fifo", "priority": 10`, `"policy": "deadline", "runtime": "2ms", "deadline": "1ms"`),
			`groups[0]: sched_setattr: deadline 1000000 ns below runtime 2000000 ns (-EINVAL)`, 5},
		{"runtime for fifo", edit(`"priority": 10`, `"priority": 10, "runtime": "1ms"`),
			`groups[0].runtime: "runtime" is for policy deadline only`, 5},
		{"rt priority out of range", edit(`"priority": 10`, `"priority": 100`),
			`groups[0].priority: rt priority 100 out of range 1..99`, 5},
		{"rt priority missing", edit(`"priority": 10,`, ``),
			`groups[0].priority: rt priority 0 out of range 1..99`, 5},
		{"nice out of range", edit(`"policy": "fifo", "priority": 10`, `"policy": "normal", "priority": 20`),
			`groups[0].priority: nice 20 out of range -20..19`, 5},
		{"setprio priority out of range", edit(`{"compute": "1ms"}`, `{"setprio": {"policy": "rr", "priority": 0}}`),
			`groups[0].program[1].setprio.priority: rt priority 0 out of range 1..99`, 8},
		{"duplicate group name", edit(`]}
  ]`, `]},
    {"name": "g", "program": [{"yield": true}]}
  ]`),
			`groups[1].name: duplicate group name "g" (also groups[0])`, 12},
		{"duplicate mutex", edit(`["a", "b"]`, `["a", "a"]`),
			`mutexes[1]: duplicate mutex "a"`, 3},
		{"duplicate key", edit(`"name": "t",`, `"name": "t", "name": "u",`),
			`duplicate key "name"`, 2},
		{"syntax error", edit(`{"loop": {"to": 0}}`, `{"loop": {"to": 0}},`),
			`syntax error: invalid character ']'`, 11},
		{"missing comma", edit(`{"compute": "1ms"},`, `{"compute": "1ms"}`),
			`syntax error: invalid character '{' after array element`, 9},
		{"trailing garbage", good + "\n\nxyz\n", `unexpected data after the top-level object`, 15},
		{"second object", good + "{}", `unexpected data after the top-level object`, 13},
		{"truncated", good[:len(good)-4], `syntax error: unexpected end of JSON input`, 12},
		{"empty file", "  \n", `empty file`, 0},
		{"not an object", `[1, 2]`, `want a JSON object at the top level, got an array`, 1},
		{"empty groups", `{"groups": []}`, `groups: empty (want at least one group)`, 1},
		{"missing groups", `{"name": "x"}`, `missing key "groups"`, 1},
		{"empty program", edit(`"program": [
       {"lock": "$0"},
       {"compute": "1ms"},
       {"unlock": "$0"},
       {"loop": {"to": 0}}
     ]`, `"program": []`), `groups[0].program: empty program`, 6},
		{"wake of unknown group", edit(`{"compute": "1ms"}`, `{"wake": "h"}`),
			`groups[0].program[1].wake: unknown group "h"`, 8},
		{"wake object of unknown group", edit(`{"compute": "1ms"}`, `{"wake": {"group": "h", "offset": 1}}`),
			`groups[0].program[1].wake.group: unknown group "h"`, 8},
		{"wake index out of range", edit(`{"compute": "1ms"}`, `{"wake": {"group": "g", "index": 2}}`),
			`groups[0].program[1].wake.index: task 2 out of range 0..1 of group "g"`, 8},
		{"wake index and offset", edit(`{"compute": "1ms"}`, `{"wake": {"group": "g", "index": 1, "offset": 1}}`),
			`groups[0].program[1].wake: both index and offset`, 8},
		{"affinity two modes", edit(`{"compute": "1ms"}`, `{"affinity": {"window": 2, "all": true}}`),
			`groups[0].program[1].affinity: want exactly one of cpus, window, all, spread (got 2)`, 8},
		{"affinity bad cpulist", edit(`{"compute": "1ms"}`, `{"affinity": {"cpus": "0-x"}}`),
			`groups[0].program[1].affinity.cpus: bad cpu "x"`, 8},
		{"affinity index without group", edit(`{"compute": "1ms"}`, `{"affinity": {"all": true, "index": 0}}`),
			`groups[0].program[1].affinity: index without group`, 8},
		{"group cpus", edit(`"slots": 1,`, `"slots": 1, "cpus": "3-1",`),
			`groups[0].cpus: cpu range "3-1" outside`, 5},
		{"yield false", edit(`{"compute": "1ms"}`, `{"yield": false}`),
			`groups[0].program[1].yield: must be true`, 8},
		{"type mismatch count", edit(`"count": 2`, `"count": "2"`),
			`groups[0].count: want an integer, got a string`, 5},
		{"fractional count", edit(`"count": 2`, `"count": 2.5`),
			`groups[0].count: want an integer, got 2.5`, 5},
		{"zero count", edit(`"count": 2`, `"count": 0`),
			`groups[0].count: 0 out of range`, 5},
		{"null name", edit(`"name": "t"`, `"name": null`),
			`name: want a string, got null`, 2},
		{"instruction not an object", edit(`{"compute": "1ms"}`, `"compute"`),
			`groups[0].program[1]: want an instruction object`, 8},
		{"self without mutexes", `{"groups": [{"name": "g", "program": [{"lock": "$self"}]}]}`,
			`groups[0].program[0].lock: $self but the scenario has no mutexes`, 1},
		{"mutex name with $", edit(`["a", "b"]`, `["a", "$b"]`),
			`mutexes[1]: mutex name "$b" starts with $`, 3},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if seen[c.name] {
				t.Fatalf("duplicate case name")
			}
			seen[c.name] = true
			s, err := Parse("bad.json", []byte(c.src))
			if err == nil {
				t.Fatalf("no error; parsed %+v", s)
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") {
				t.Errorf("error spans lines: %q", msg)
			}
			if !strings.HasPrefix(msg, "bad.json: ") {
				t.Errorf("error %q does not start with the file name", msg)
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("error %q\ndoes not contain %q", msg, c.want)
			}
			if c.line > 0 {
				if want := "bad.json: line " + strconv.Itoa(c.line) + ": "; !strings.HasPrefix(msg, want) {
					t.Errorf("error %q: want line %d", msg, c.line)
				}
			}
		})
	}
}

func TestParseFileErrors(t *testing.T) {
	_, err := ParseFile("testdata/does-not-exist.json")
	if err == nil || !strings.HasPrefix(err.Error(), "testdata/does-not-exist.json: ") {
		t.Errorf("missing file: %v", err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\n  \"groups\": [\n    {\"name\": \"g\", \"program\": [{\"lok\": \"a\"}]}\n  ]\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ParseFile(bad)
	want := bad + `: line 3: groups[0].program[0]: unknown instruction "lok"`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want prefix %q", err, want)
	}
}

func TestEncodeErrors(t *testing.T) {
	base := func() *Scenario {
		return &Scenario{Mutexes: []string{"a"}, Groups: []Group{{Name: "g", Count: 1, Program: []Op{mk(task.Op{Kind: task.OpYield})}}}}
	}
	if _, err := Encode(base()); err != nil {
		t.Fatalf("base: %v", err)
	}
	for _, c := range []struct {
		name string
		mod  func(s *Scenario)
		want string
	}{
		{"nil", nil, "nil scenario"},
		{"bad policy", func(s *Scenario) { s.Groups[0].Policy = task.IdlePolicy }, "policy 3 not representable"},
		{"bad kind", func(s *Scenario) { s.Groups[0].Program[0].Kind = task.NumOps }, "unknown instruction"},
		{"bad mutex", func(s *Scenario) {
			s.Groups[0].Program[0] = mk(task.Op{Kind: task.OpLock, Mutex: 3})
		}, "mutex 3 out of range"},
		{"wake without target", func(s *Scenario) {
			s.Groups[0].Program[0] = mk(task.Op{Kind: task.OpWake})
		}, "wake without a target group"},
		{"absolute target", func(s *Scenario) {
			s.Groups[0].Program[0] = mk(task.Op{Kind: task.OpWake, Target: 1})
		}, "absolute target task 1"},
		{"zero count", func(s *Scenario) { s.Groups[0].Count = 0 }, "count: 0 out of range"},
		{"bad jump", func(s *Scenario) {
			s.Groups[0].Program[0] = mk(task.Op{Kind: task.OpLoop, Jump: 5})
		}, "jump target 5 out of range"},
	} {
		var s *Scenario
		if c.mod != nil {
			s = base()
			c.mod(s)
		}
		_, err := Encode(s)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(good))
	f.Add([]byte(`{"groups": [{"name": "g", "program": [{"lock": "$"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.json", data)
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "f.json: ") {
				t.Fatalf("bad error %q", msg)
			}
			return
		}
		out, err := Encode(s)
		if err != nil {
			t.Fatalf("Encode of a parsed scenario: %v", err)
		}
		back, err := Parse("f.json", out)
		if err != nil {
			t.Fatalf("reparse: %v\n%s", err, out)
		}
		s.Source, back.Source = nil, nil // where it was read is not its meaning
		if !reflect.DeepEqual(s, back) {
			t.Fatalf("round trip differs:\n%s", out)
		}
	})
}

// A scenario's topology is kept and written back.
func TestTopologyRoundTrip(t *testing.T) {
	src := `{"name": "t", "topology": "1s-2llc-2c-2t", "mutexes": ["a"], "groups": [{"name": "g", "count": 1, "program": [{"compute": "1ms"}]}]}`
	s, err := Parse("t.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s.Topology != "1s-2llc-2c-2t" {
		t.Fatalf("topology %q", s.Topology)
	}
	out, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse("t2.json", out)
	if err != nil || s2.Topology != s.Topology {
		t.Fatalf("round trip: %q, %v\n%s", s2.Topology, err, out)
	}
}

// Errors that only the plan finds (a machine too small for a mask, a
// program that breaks the mutex rules) name the file and the line.
func TestPlanErrorsNameFileAndLine(t *testing.T) {
	cases := []struct {
		name, text string
		cpus       int
		want       string
	}{
		{"affinity", `{"mutexes": ["a"], "groups": [
  {"name": "g", "program": [{"sleep": "1ms"}]},
  {"name": "h",
   "cpus": "6-7",
   "program": [{"sleep": "1ms"}]}]}`, 4, "x.json: line 4: groups[1].cpus: group h: "},
		{"affinity-op", `{"groups": [{"name": "g", "program": [
  {"sleep": "1ms"},
  {"affinity": {"cpus": "9"}}]}]}`, 4, "x.json: line 3: groups[0].program[1]: affinity mask has no CPU below 4"},
		{"unlock-free", `{"mutexes": ["a", "b"], "groups": [{"name": "g", "program": [
  {"lock": "a"},
  {"choose": {"p": 0.5, "to": 3}},
  {"unlock": "a"},
  {"unlock": "a"},
  {"sleep": "1ms"}]}]}`, 2, "x.json: line 5: groups[0].program[3]: unlocks a, which the task does not hold"},
		{"relock", `{"mutexes": ["a"], "groups": [{"name": "g", "program": [
  {"lock": "a"},
  {"sleep": "1ms"},
  {"loop": {"to": 0}}]}]}`, 2, "x.json: line 2: groups[0].program[0]: locks a, which the task already holds"},
		{"cycle", `{"mutexes": ["a", "b"], "groups": [
  {"name": "g", "program": [{"lock": "a"}, {"lock": "b"}, {"unlock": "b"}, {"unlock": "a"}]},
  {"name": "h", "program": [
    {"lock": "b"},
    {"lock": "a"}, {"unlock": "a"}, {"unlock": "b"}]}]}`, 2, "lock order cycle a -> b -> a"},
		{"dl-admission", `{"groups": [
  {"name": "g", "program": [{"sleep": "1ms"}]},
  {"name": "d", "count": 3, "policy": "deadline", "runtime": "7ms", "deadline": "10ms",
   "program": [{"compute": "1ms"}, {"sleep": "9ms"}]}]}`, 2,
			"x.json: line 3: groups[1]: group d: SCHED_DEADLINE admission control refuses task 2 (-EBUSY): the deadline tasks up to it reserve 2.1 CPUs, more than 95% of the machine's 2"},
	}
	for _, c := range cases {
		s, err := Parse("x.json", []byte(c.text))
		if err != nil {
			t.Fatalf("%s: parse: %v", c.name, err)
		}
		_, err = s.Plan(c.cpus, 1)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: Plan error %v, want one line containing %q", c.name, err, c.want)
		}
	}
	// the built-in workloads follow the rules at every size and seed
	for _, name := range BuiltinNames() {
		for _, cpus := range []int{1, 3, 8, 64} {
			for seed := uint64(1); seed <= 5; seed++ {
				s, err := Builtin(name, cpus, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Plan(cpus, seed); err != nil {
					t.Errorf("%s at %d CPUs, seed %d: %v", name, cpus, seed, err)
				}
			}
		}
	}
}

// The signal instructions and the interruptible and killable locks parse,
// survive a round trip, and resolve their targets.
func TestSignalInstructionsRoundTrip(t *testing.T) {
	src := `{"mutexes": ["a"], "groups": [
	  {"name": "w", "count": 2, "program": [
	    {"lock_interruptible": "a"}, {"compute": "1ms"}, {"unlock": "a"},
	    {"lock_killable": "a"}, {"unlock": "a"}, {"sleep": "1ms"}]},
	  {"name": "s", "program": [{"signal": {"group": "w", "index": 1}}, {"kill": "w"}, {"sleep": "1ms"}]}]}`
	s, err := Parse("sig.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	w := s.Groups[0].Program
	if w[0].Kind != task.OpLock || w[0].LockMode != task.LockInterruptible || w[3].LockMode != task.LockKillable || w[2].LockMode != task.LockUninterruptible {
		t.Fatalf("lock modes: %+v", w)
	}
	out, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("sig.json", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	back.Source, s.Source = nil, nil
	if !reflect.DeepEqual(s, back) {
		t.Fatalf("round trip differs:\n%s", out)
	}
	plans, err := s.Plan(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	sp := plans[2].Prog
	if sp.Ops[0].Kind != task.OpSignal || sp.Ops[0].Target != 2 || sp.Ops[1].Kind != task.OpKill || sp.Ops[1].Target == 0 {
		t.Fatalf("signal targets: %+v", sp.Ops[:2])
	}
	wp := plans[0].Prog
	wp.Link()
	if wp.Ops[0].EINTRPC != 3 || wp.Ops[3].EINTRPC != 5 {
		t.Fatalf("EINTR targets: %d %d, want 3 5", wp.Ops[0].EINTRPC, wp.Ops[3].EINTRPC)
	}
}

// The hotplug and migrate_disable instructions parse, survive a round
// trip, mark the scenario as using hotplug, and a CPU beyond the machine
// is an error naming the instruction when the scenario is planned.
func TestHotplugInstructionsRoundTrip(t *testing.T) {
	src := `{"mutexes": ["a"], "groups": [
	  {"name": "w", "count": 2, "program": [
	    {"migrate_disable": true}, {"lock": "a"}, {"compute": "1ms"}, {"unlock": "a"}, {"migrate_enable": true}, {"sleep": "1ms"}]},
	  {"name": "h", "program": [{"offline": 3}, {"sleep": "2ms"}, {"online": 3}, {"sleep": "2ms"}]}]}`
	s, err := Parse("hp.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !s.UsesHotplug() {
		t.Fatal("UsesHotplug false")
	}
	h := s.Groups[1].Program
	if h[0].Kind != task.OpCPUOffline || h[0].CPU != 3 || h[2].Kind != task.OpCPUOnline || s.Groups[0].Program[0].Kind != task.OpMigrateDisable {
		t.Fatalf("parsed: %+v %+v", h, s.Groups[0].Program)
	}
	out, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("hp.json", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	back.Source, s.Source = nil, nil
	if !reflect.DeepEqual(s, back) {
		t.Fatalf("round trip differs:\n%s", out)
	}
	if _, err := s.Plan(4, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Plan(2, 1); err == nil || !strings.Contains(err.Error(), "offline: cpu 3 out of range") {
		t.Fatalf("plan on 2 CPUs: %v", err)
	}
	if _, err := Parse("bad.json", []byte(`{"groups": [{"name": "h", "program": [{"offline": -1}]}]}`)); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("negative cpu: %v", err)
	}
}

// TestWWScenarioFile reads the ww keys and instructions, plans them, and
// writes them back (Parse(Encode(s)) == s); a ww_lock of a plain mutex
// and an init without a class are one-line errors.
func TestWWScenarioFile(t *testing.T) {
	src := `{"mutexes": ["m"], "ww": [{"name": "wd", "wait_die": true, "count": 3}, {"name": "ww", "count": 2}],
	  "groups": [
	    {"name": "t", "count": 2, "ww": "wd", "ww_slots": 2, "program": [
	      {"ww_acquire_init": true}, {"ww_lock_slow": true},
	      {"ww_lock": {"mutex": "$0", "retry": 1}}, {"ww_lock_interruptible": {"mutex": "$1", "retry": 1}},
	      {"compute": "10us"}, {"ww_unlock": "$1"}, {"ww_unlock": "$0"}, {"ww_acquire_fini": true},
	      {"loop": {"to": 0}}]},
	    {"name": "u", "ww": "ww", "program": [
	      {"ww_acquire_init": true}, {"ww_lock": {"mutex": "ww1", "retry": 0}}, {"ww_unlock": "ww1"},
	      {"ww_acquire_fini": true}, {"lock": "m"}, {"unlock": "m"}, {"loop": {"to": 0}}]}]}`
	s, err := Parse("ww.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.WW) != 2 || !s.WW[0].WaitDie || s.WW[1].WaitDie || s.NumMutexes() != 6 {
		t.Fatalf("ww classes %+v, %d mutexes", s.WW, s.NumMutexes())
	}
	plans, err := s.Plan(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range plans[:2] {
		a, b := tp.Prog.Ops[2].Mutex, tp.Prog.Ops[3].Mutex
		if a == b || a < 1 || a > 3 || b < 1 || b > 3 || tp.Prog.Ops[0].Class != 0 {
			t.Errorf("%s: ww slots resolved to %d, %d (want two of 1-3), class %d", tp.Name, a, b, tp.Prog.Ops[0].Class)
		}
	}
	if u := plans[2].Prog; u.Ops[1].Mutex != 5 || u.Ops[0].Class != 1 || u.Ops[1].LockMode != task.LockUninterruptible {
		t.Errorf("u: ww1 is mutex %d (want 5), class %d", u.Ops[1].Mutex, u.Ops[0].Class)
	}
	out, err := Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("encoded", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	back.Source, s.Source = nil, nil // where it was read is not its meaning
	if !reflect.DeepEqual(back, s) {
		t.Errorf("round trip differs:\n%s", out)
	}
	for _, bad := range []struct{ src, want string }{
		{`{"mutexes": ["m"], "groups": [{"name": "t", "program": [{"ww_unlock": "m"}]}]}`, `"m" is not a ww_mutex`},
		{`{"groups": [{"name": "t", "program": [{"ww_acquire_init": true}]}]}`, `has no ww class`},
		{`{"ww": [{"name": "a", "count": 1}], "groups": [{"name": "t", "ww": "a", "program": [{"ww_lock": {"mutex": "a0"}}]}]}`, `missing key "retry"`},
	} {
		_, err := Parse("bad.json", []byte(bad.src))
		if err == nil || !strings.Contains(err.Error(), bad.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line with %q", bad.src, err, bad.want)
		}
	}
}
