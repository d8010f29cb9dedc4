package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// perfettoEvent is one decoded trace event. Pointers tell absent fields
// from zero values.
type perfettoEvent struct {
	Name  string         `json:"name"`
	Cat   string         `json:"cat"`
	Ph    *string        `json:"ph"`
	TS    *float64       `json:"ts"`
	Dur   *float64       `json:"dur"`
	PID   *int           `json:"pid"`
	TID   *int           `json:"tid"`
	ID    *uint64        `json:"id"`
	BP    string         `json:"bp"`
	S     string         `json:"s"`
	Cname string         `json:"cname"`
	Args  map[string]any `json:"args"`
}

type perfettoFile struct {
	TraceEvents     []perfettoEvent   `json:"traceEvents"`
	DisplayTimeUnit string            `json:"displayTimeUnit"`
	Metadata        map[string]string `json:"metadata"`
}

const (
	taskOwner  = 1 // "A", holds m7
	taskDonor  = 2 // "B", blocks on m7
	taskOther  = 3 // "C"
	taskWeird  = 4
	weirdName  = "we\"ird\\\n\x01"
	testMutex  = 7
	idle0      = -1
	idle1      = -2
	pickTime   = 4125
	lastTime   = 7000
	violateInv = 3
)

var testNames = TaskNames([]TaskInfo{{taskOwner, "A"}, {taskDonor, "B"}, {taskOther, "C"}, {taskWeird, weirdName}})

// scenario records a proxy race on two CPUs and returns the merged events.
func scenario() []Event {
	l := NewLog(2, 64)
	c0, c1 := l.Rings[0], l.Rings[1]
	c0.Emit(1000, EvSwitch, taskOther, idle0, taskOther, 0)         // cpu0: C from 1µs
	c1.Emit(1500, EvSwitch, taskDonor, idle1, taskDonor, 0)         // cpu1: B from 1.5µs
	c0.Emit(2000, EvWake, taskOwner, 0, 0, 0)                       // A queued on cpu0
	c1.Emit(3250, EvContend, taskDonor, testMutex, taskOwner, 0)    // B contends on m7 owned by A
	c1.Emit(3300, EvMigrate, taskDonor, 1, 0, int32(ReasonProxy))   // B goes to A's CPU
	c1.Emit(3400, EvSwitch, idle1, taskDonor, idle1, 0)             // cpu1 idles from 3.4µs
	c0.Emit(pickTime, EvProxyPick, taskOwner, taskDonor, 1, 0)      // cpu0 picks B, runs A
	c0.Emit(pickTime, EvSwitch, taskOwner, taskOther, taskDonor, 0) // A (proxy for B) from 4.125µs
	c0.Emit(5000, EvViolation, taskOwner, violateInv, 0, 0)         // something broke
	c0.Emit(5500, EvBlockedOnClear, taskDonor, testMutex, 0, 0)     // B: blocked_on cleared (hand-off)
	c0.Emit(5500, EvUnlock, taskOwner, testMutex, taskDonor, 0)     // A hands m7 to B
	c0.Emit(6000, EvSwitch, taskWeird, taskOwner, taskWeird, 0)     // odd name from 6µs
	c1.Emit(lastTime, EvWakeRunnable, taskOwner, 0, 0, 0)           // last event: end of trace
	return l.Merged(0)
}

func export(t *testing.T, events []Event, ncpu int) []byte {
	t.Helper()
	var buf bytes.Buffer
	meta := map[string]string{"seed": "42", "cmdline": "proxysim -seed 42"}
	if err := WritePerfetto(&buf, events, ncpu, testNames, meta); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decode(t *testing.T, out []byte) perfettoFile {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(out, &top); err != nil {
		t.Fatalf("output is not a JSON object: %v\n%s", err, out)
	}
	if _, ok := top["traceEvents"]; !ok {
		t.Fatalf("no traceEvents in %s", out)
	}
	var f perfettoFile
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return f
}

func us(ns int64) float64 { return float64(ns) / 1000 }

func phOf(e perfettoEvent) string {
	if e.Ph == nil {
		return ""
	}
	return *e.Ph
}

func checkWellFormed(t *testing.T, evs []perfettoEvent) {
	t.Helper()
	for i, e := range evs {
		if e.Ph == nil || e.PID == nil || e.TID == nil {
			t.Errorf("event %d %q lacks ph, pid or tid", i, e.Name)
			continue
		}
		if *e.Ph != "M" && e.TS == nil {
			t.Errorf("event %d %q (ph %s) lacks ts", i, e.Name, *e.Ph)
		}
		if *e.PID != 1 {
			t.Errorf("event %d %q: pid %d, want 1", i, e.Name, *e.PID)
		}
		switch *e.Ph {
		case "X":
			if e.Dur == nil || *e.Dur < 0 {
				t.Errorf("slice %d %q: bad dur", i, e.Name)
			}
		case "s", "f":
			if e.ID == nil || e.Cat == "" || e.Name == "" {
				t.Errorf("flow %d lacks id, cat or name: %+v", i, e)
			}
		}
	}
}

func TestWritePerfetto(t *testing.T) {
	out := export(t, scenario(), 2)
	f := decode(t, out)
	evs := f.TraceEvents
	checkWellFormed(t, evs)
	if f.DisplayTimeUnit != "ns" {
		t.Errorf("displayTimeUnit %q", f.DisplayTimeUnit)
	}
	if f.Metadata["seed"] != "42" || f.Metadata["cmdline"] != "proxysim -seed 42" {
		t.Errorf("metadata %v", f.Metadata)
	}

	// Tracks: one process, cpu0 and cpu1 named and ordered.
	threads := map[int]string{}
	sortIdx := map[int]float64{}
	process := ""
	for _, e := range evs {
		if phOf(e) != "M" {
			continue
		}
		switch e.Name {
		case "process_name":
			process, _ = e.Args["name"].(string)
		case "thread_name":
			threads[*e.TID], _ = e.Args["name"].(string)
		case "thread_sort_index":
			sortIdx[*e.TID], _ = e.Args["sort_index"].(float64)
		}
	}
	if process != "proxysim machine" {
		t.Errorf("process_name %q", process)
	}
	if threads[1] != "cpu0" || threads[2] != "cpu1" || len(threads) != 2 {
		t.Errorf("thread names %v", threads)
	}
	if sortIdx[1] != 0 || sortIdx[2] != 1 {
		t.Errorf("thread sort indexes %v", sortIdx)
	}

	// Slices, exact in microseconds.
	type slice struct {
		name    string
		tid     int
		ts, dur float64
	}
	want := []slice{
		{"C", 1, us(1000), us(pickTime - 1000)},
		{"A (proxy for B)", 1, us(pickTime), us(6000 - pickTime)},
		{weirdName, 1, us(6000), us(lastTime - 6000)},
		{"B", 2, us(1500), us(3400 - 1500)},
		{"idle", 2, us(3400), us(lastTime - 3400)},
	}
	var got []slice
	for _, e := range evs {
		if phOf(e) == "X" {
			got = append(got, slice{e.Name, *e.TID, *e.TS, *e.Dur})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("slices %+v, want %+v", got, want)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			if g == w {
				found = true
			}
		}
		if !found {
			t.Errorf("missing slice %+v in %+v", w, got)
		}
	}
	// Spot-check the units with literals too: 4125 ns is 4.125 µs.
	var proxy perfettoEvent
	for _, e := range evs {
		if phOf(e) == "X" && strings.Contains(e.Name, "proxy for") {
			proxy = e
		}
	}
	if proxy.TS == nil || *proxy.TS != 4.125 || *proxy.Dur != 1.875 || *proxy.TID != 1 {
		t.Fatalf("proxy slice %+v", proxy)
	}
	if !strings.Contains(proxy.Name, "B") || proxy.Args["donor"] != "B" || proxy.Args["task"] != "A" {
		t.Errorf("proxy slice does not name its donor: %q %v", proxy.Name, proxy.Args)
	}

	// Exactly one flow pair for the one proxy pick.
	var starts, ends []perfettoEvent
	for _, e := range evs {
		switch phOf(e) {
		case "s":
			starts = append(starts, e)
		case "f":
			ends = append(ends, e)
		}
	}
	if len(starts) != 1 || len(ends) != 1 {
		t.Fatalf("flows: %d starts, %d ends, want 1 and 1", len(starts), len(ends))
	}
	s, fe := starts[0], ends[0]
	if *s.ID != *fe.ID || s.Cat != "proxy" || fe.Cat != "proxy" || s.Name != fe.Name {
		t.Errorf("flow pair does not match: %+v / %+v", s, fe)
	}
	if fe.BP != "e" {
		t.Errorf("flow end bp %q", fe.BP)
	}
	// The donor was last seen on cpu1 (its migrate and switch-out): the
	// arrow leaves cpu1 1 ns before the pick, inside the slice running there
	// (idle since 3.4 µs), and lands 1 ns into A's slice on cpu0.
	if *s.TID != 2 || *s.TS != us(pickTime-1) {
		t.Errorf("flow start tid %d ts %v, want 2 %v", *s.TID, *s.TS, us(pickTime-1))
	}
	if *fe.TID != 1 || *fe.TS != us(pickTime+1) {
		t.Errorf("flow end tid %d ts %v, want 1 %v", *fe.TID, *fe.TS, us(pickTime+1))
	}
	if fe.TS == nil || *fe.TS <= *proxy.TS || *fe.TS >= *proxy.TS+*proxy.Dur {
		t.Errorf("flow end %v is not inside the proxy slice", *fe.TS)
	}

	// Instants.
	byName := map[string][]perfettoEvent{}
	for _, e := range evs {
		if phOf(e) == "i" {
			if e.S != "t" {
				t.Errorf("instant %q scope %q", e.Name, e.S)
			}
			byName[e.Name] = append(byName[e.Name], e)
		}
	}
	v := byName[fmt.Sprintf("VIOLATION invariant %d", violateInv)]
	if len(v) != 1 || *v[0].TID != 1 || *v[0].TS != 5 || v[0].Cname != "terrible" {
		t.Errorf("violation instant %+v", v)
	}
	m := byName["migrate proxy"]
	if len(m) != 1 || *m[0].TID != 2 || *m[0].TS != 3.3 || m[0].Args["task"] != "B" ||
		m[0].Args["from"] != 1.0 || m[0].Args["to"] != 0.0 {
		t.Errorf("migrate instant %+v", m)
	}
	bo := byName["blocked_on_clear"]
	if len(bo) != 1 || bo[0].Args["task"] != "B" || bo[0].Args["mutex"] != float64(testMutex) {
		t.Errorf("blocked_on_clear instant %+v", bo)
	}
	for _, n := range []string{"wake", "contend", "unlock", "wake_runnable", "proxy_pick"} {
		if len(byName[n]) != 1 {
			t.Errorf("want one %q instant, got %d", n, len(byName[n]))
		}
	}
	if c := byName["contend"]; len(c) == 1 && c[0].Args["owner"] != "A" {
		t.Errorf("contend args %v", c[0].Args)
	}
}

// A proxy pick that keeps the owner running (prev == next, no EvSwitch)
// splits its slice at the pick.
func TestWritePerfettoPickWithoutSwitch(t *testing.T) {
	l := NewLog(1, 16)
	c0 := l.Rings[0]
	c0.Emit(1000, EvSwitch, taskOwner, idle0, taskOwner, 0)
	c0.Emit(2000, EvProxyPick, taskOwner, taskDonor, 1, 0)
	c0.Emit(3000, EvExit, taskOwner, 0, 0, 0)
	f := decode(t, export(t, l.Merged(0), 1))
	checkWellFormed(t, f.TraceEvents)
	var names []string
	var flowEnd *perfettoEvent
	for i, e := range f.TraceEvents {
		switch phOf(e) {
		case "X":
			names = append(names, fmt.Sprintf("%s@%v+%v", e.Name, *e.TS, *e.Dur))
		case "f":
			flowEnd = &f.TraceEvents[i]
		}
	}
	want := []string{"A@1+1", "A (proxy for B)@2+1"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("slices %v, want %v", names, want)
	}
	// The donor was never seen: the arrow starts on the picking CPU, in
	// A's first slice, and ends in the second.
	if flowEnd == nil || *flowEnd.TS != 2.001 || *flowEnd.TID != 1 {
		t.Errorf("flow end %+v", flowEnd)
	}
}

func TestWritePerfettoDeterministic(t *testing.T) {
	ev := scenario()
	a, b := export(t, ev, 2), export(t, ev, 2)
	if !bytes.Equal(a, b) {
		t.Fatal("two exports of the same events differ")
	}
	// Metadata with many keys: map order must not leak into the output.
	meta := map[string]string{}
	for i := range 50 {
		meta[fmt.Sprintf("k%02d", i)] = fmt.Sprint(i)
	}
	var x, y bytes.Buffer
	if err := WritePerfetto(&x, ev, 2, nil, meta); err != nil {
		t.Fatal(err)
	}
	if err := WritePerfetto(&y, ev, 2, nil, meta); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x.Bytes(), y.Bytes()) {
		t.Fatal("metadata order is not deterministic")
	}
	if !strings.Contains(x.String(), `"k00":"0","k01":"1"`) {
		t.Errorf("metadata keys not sorted")
	}
}

func TestWritePerfettoSkipsOutOfRangeCPUs(t *testing.T) {
	ev := []Event{
		{Seq: 1, Time: 1000, CPU: 0, Kind: EvSwitch, Task: taskOwner, A: idle0, B: taskOwner},
		{Seq: 2, Time: 1100, CPU: 2, Kind: EvSwitch, Task: taskDonor, A: -3, B: taskDonor},
		{Seq: 3, Time: 1200, CPU: -1, Kind: EvViolation, A: 9},
		{Seq: 4, Time: 1300, CPU: 99, Kind: EvProxyPick, Task: taskOwner, A: taskDonor, B: 1},
		{Seq: 5, Time: 2000, CPU: 1, Kind: EvLock, Task: taskOther, A: testMutex},
	}
	f := decode(t, export(t, ev, 2))
	checkWellFormed(t, f.TraceEvents)
	for _, e := range f.TraceEvents {
		if phOf(e) == "M" {
			continue
		}
		if *e.TID < 1 || *e.TID > 2 {
			t.Errorf("event %q on tid %d", e.Name, *e.TID)
		}
		if strings.Contains(e.Name, "VIOLATION") || phOf(e) == "s" || phOf(e) == "f" || e.Name == "B" {
			t.Errorf("out-of-range event exported: %+v", e)
		}
	}
	// ncpu 0 (or negative): only the process metadata, still valid.
	for _, n := range []int{0, -1} {
		f := decode(t, export(t, ev, n))
		for _, e := range f.TraceEvents {
			if phOf(e) != "M" || !strings.HasPrefix(e.Name, "process_") {
				t.Errorf("ncpu %d: unexpected event %+v", n, e)
			}
		}
	}
}

func TestAppendMicros(t *testing.T) {
	for ns, want := range map[int64]string{0: "0", 1: "0.001", 10: "0.01", 999: "0.999", 1000: "1",
		1500: "1.5", 4125: "4.125", 1234567: "1234.567", -1500: "-1.5", 123456789012345: "123456789012.345"} {
		if got := string(appendMicros(nil, ns)); got != want {
			t.Errorf("appendMicros(%d) = %s, want %s", ns, got, want)
		}
	}
}

// bigTrace makes n events of a busy 8-CPU machine.
func bigTrace(n int) []Event {
	ev := make([]Event, 0, n)
	kinds := []Kind{EvSwitch, EvWake, EvLock, EvContend, EvProxyPick, EvSwitch, EvUnlock, EvMigrate, EvIsBlocked, EvTick}
	for i := range n {
		k := kinds[i%len(kinds)]
		cpu := int32(i % 8)
		task := int32(i%37 + 1)
		e := Event{Seq: uint64(i + 1), Time: int64(i) * 333, CPU: cpu, Kind: k, Task: task, A: int32(i % 5), B: int32(i%11 + 1)}
		if k == EvProxyPick {
			e.A = task%13 + 1
		}
		ev = append(ev, e)
	}
	return ev
}

// A large trace stays valid JSON (speed: BenchmarkWritePerfetto, 300k events).
func TestWritePerfettoLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ev := bigTrace(50_000)
	var buf bytes.Buffer
	start := time.Now()
	if err := WritePerfetto(&buf, ev, 8, func(id int32) string { return fmt.Sprint("t", id) }, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events -> %d bytes in %v", len(ev), buf.Len(), time.Since(start))
	if !json.Valid(buf.Bytes()) {
		t.Fatal("invalid JSON")
	}
}

func BenchmarkWritePerfetto(b *testing.B) {
	ev := bigTrace(300_000)
	names := func(id int32) string { return "task" }
	for b.Loop() {
		if err := WritePerfetto(io.Discard, ev, 8, names, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// The task already running when a CPU's part of the trace begins gets a
// slice from that CPU's first event; a tick whose donor disagrees with the
// open slice splits it.
func TestWritePerfettoTruncatedAndTick(t *testing.T) {
	ev := []Event{
		{Seq: 1, Time: 500, CPU: 0, Kind: EvLock, Task: taskOther, A: testMutex},
		{Seq: 2, Time: 1000, CPU: 0, Kind: EvSwitch, Task: taskOwner, A: taskOther, B: taskDonor},
		{Seq: 3, Time: 2500, CPU: 0, Kind: EvTick, Task: taskOwner, A: taskOwner},
		{Seq: 4, Time: 3000, CPU: 0, Kind: EvTick, Task: taskOwner, A: taskOwner},
		{Seq: 5, Time: 4000, CPU: 0, Kind: EvExit, Task: taskOwner},
	}
	f := decode(t, export(t, ev, 1))
	checkWellFormed(t, f.TraceEvents)
	var got []string
	for _, e := range f.TraceEvents {
		switch phOf(e) {
		case "X":
			got = append(got, fmt.Sprintf("%s@%v+%v truncated=%v", e.Name, *e.TS, *e.Dur, e.Args["truncated"]))
		case "i":
			if e.Name == "tick" {
				t.Errorf("ticks are not drawn")
			}
		}
	}
	want := []string{"C@0.5+0.5 truncated=true", "A (proxy for B)@1+1.5 truncated=<nil>", "A@2.5+1.5 truncated=<nil>"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("slices\n%v\nwant\n%v", got, want)
	}
}
