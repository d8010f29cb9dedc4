package trace

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Perfetto export: the Chrome trace-event JSON object format, which
// ui.perfetto.dev, chrome://tracing and speedscope open.
//
// Layout. Everything lives in one process, pid 1 ("proxysim machine");
// CPU n is thread tid n+1, named "cpu<n>" and sorted by CPU number.
//
//   - Each task run on a CPU is a complete slice ("ph":"X") from the
//     EvSwitch that switched it in to the next EvSwitch on that CPU (or
//     to the end of the trace, the latest event time, while still
//     running). A task run on behalf of a different donor is named
//     "<owner> (proxy for <donor>)". Idle runs are muted slices named
//     "idle" so that gaps stay visible and flows have a slice to bind to.
//     The task that was running when a CPU's part of the trace begins
//     gets a slice from that CPU's first event, flagged "truncated".
//     A proxy pick that keeps the owner running with a new donor (no
//     EvSwitch: prev == next) splits the slice at the pick, and so does an
//     EvTick whose curr/donor disagree with the open slice.
//   - Protocol events are thread-scoped instants ("ph":"i","s":"t") on the
//     recording CPU's track; violations are named "VIOLATION invariant N"
//     with "cname":"terrible". EvTick is not drawn (too many).
//   - Each EvProxyPick is a flow arrow ("cat":"proxy","name":"proxy"): its
//     start ("ph":"s") is on the track of the CPU where the donor was last
//     seen (else the picking CPU) and its end ("ph":"f","bp":"e") is inside
//     the owner's slice on the picking CPU.
//
// Flow events bind to the slice that encloses their timestamp, and in the
// simulator a pick, the switch that follows it, and the end of the
// previous slice share one virtual nanosecond. So that the arrow leaves
// the slice that was running at the pick (not the one switched in at that
// same instant) and lands in the owner's slice (not the one it replaced),
// the flow start is placed 1 ns before the pick when the source track's
// current slice began earlier, and the flow end is placed 1 ns after the
// owner slice's start when it begins at the pick and lasts at least 2 ns.
//
// Timestamps are microseconds ("ts" = Time/1000), written as exact
// decimals of the nanosecond values.

// TaskInfo names a task for the trace.
type TaskInfo struct {
	ID   int32
	Name string
}

// TaskNames returns a name function for WritePerfetto from a task list.
// Unknown ids map to "" (WritePerfetto then falls back to "task<id>").
func TaskNames(infos []TaskInfo) func(id int32) string {
	m := make(map[int32]string, len(infos))
	for _, t := range infos {
		m[t.ID] = t.Name
	}
	return func(id int32) string { return m[id] }
}

// perfettoPID is the one process all CPU tracks belong to.
const perfettoPID = 1

// WritePerfetto writes events (already in global order) as a trace-event JSON object
// {"traceEvents":[...], "displayTimeUnit":"ns", "metadata":{...}} to w.
//
// tasks names task ids (nil or "" falls back to "task<id>"; idle tasks,
// which have negative ids, are "idle" in slice names). Events whose CPU is
// outside [0, ncpu) are skipped. meta becomes the top-level "metadata"
// object, keys sorted. The output depends only on the arguments.
func WritePerfetto(w io.Writer, events []Event, ncpu int, tasks func(id int32) string, meta map[string]string) error {
	if ncpu < 0 {
		ncpu = 0
	}
	x := &exporter{
		p:        pw{bw: bufio.NewWriterSize(w, 64<<10)},
		tasks:    tasks,
		cpus:     make([]cpuTrack, ncpu),
		lastSeen: make(map[int32]int32),
	}
	x.p.raw(`{"traceEvents":[`)
	x.metadata(ncpu)
	for i := range events {
		e := &events[i]
		if e.CPU < 0 || int(e.CPU) >= ncpu {
			continue
		}
		x.event(e)
	}
	x.finish()
	x.p.raw("\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":{")
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			x.p.b = append(x.p.b, ',')
		}
		x.p.b = appendJSONString(x.p.b, k)
		x.p.b = append(x.p.b, ':')
		x.p.b = appendJSONString(x.p.b, meta[k])
	}
	x.p.b = append(x.p.b, "}}\n"...)
	x.p.flush()
	return x.p.bw.Flush()
}

// pendingFlow is a proxy pick whose flow end is not written yet.
type pendingFlow struct {
	id    uint64
	owner int32
	pick  int64 // pick time, ns
}

// cpuTrack is the exporter's view of one CPU.
type cpuTrack struct {
	seen  bool
	first int64 // time of the CPU's first event in the trace

	open      bool // a slice is running
	task      int32
	donor     int32
	prev      int32
	start     int64
	truncated bool
	flows     []pendingFlow // flow ends bound to the open slice

	waiting []pendingFlow // picks waiting for the owner's slice to open
}

type exporter struct {
	p        pw
	tasks    func(int32) string
	cpus     []cpuTrack
	lastSeen map[int32]int32 // task id -> CPU of the latest event naming it
	flowID   uint64
	end      int64 // latest event time
	any      bool
}

// name is a task's name for args.
func (x *exporter) name(id int32) string {
	if x.tasks != nil {
		if s := x.tasks(id); s != "" {
			return s
		}
	}
	switch {
	case id < 0:
		return "idle"
	case id == 0:
		return "-"
	}
	return "task" + strconv.Itoa(int(id))
}

// sliceName is a task's name for a slice.
func (x *exporter) sliceName(id int32) string {
	if id < 0 {
		return "idle"
	}
	return x.name(id)
}

func (x *exporter) metadata(ncpu int) {
	p := &x.p
	p.meta("process_name", 1)
	p.argsBegin()
	p.argStr("name", "proxysim machine")
	p.argsEnd()
	p.done()
	p.meta("process_sort_index", 1)
	p.argsBegin()
	p.argInt("sort_index", 0)
	p.argsEnd()
	p.done()
	for c := 0; c < ncpu; c++ {
		p.meta("thread_name", c+1)
		p.argsBegin()
		p.argStr("name", "cpu"+strconv.Itoa(c))
		p.argsEnd()
		p.done()
		p.meta("thread_sort_index", c+1)
		p.argsBegin()
		p.argInt("sort_index", int64(c))
		p.argsEnd()
		p.done()
	}
}

func (x *exporter) seen(id int32, cpu int32) {
	if id != 0 {
		x.lastSeen[id] = cpu
	}
}

func (x *exporter) event(e *Event) {
	t := &x.cpus[e.CPU]
	if !t.seen {
		t.seen, t.first = true, e.Time
	}
	if !x.any || e.Time > x.end {
		x.any, x.end = true, e.Time
	}
	switch e.Kind {
	case EvSwitch:
		if t.open {
			x.close(e.CPU, e.Time)
		} else if e.A != 0 && e.Time > t.first {
			// prev ran since the start of this CPU's part of the trace.
			x.openSlice(e.CPU, e.A, e.A, 0, t.first, true)
			x.close(e.CPU, e.Time)
		}
		x.openSlice(e.CPU, e.Task, e.B, e.A, e.Time, false)
		x.seen(e.A, e.CPU)
		x.seen(e.B, e.CPU)
		x.seen(e.Task, e.CPU)
		return
	case EvTick:
		if !t.open {
			x.openSlice(e.CPU, e.Task, e.A, 0, t.first, true)
		} else if t.task != e.Task || t.donor != e.A {
			prev := t.task
			x.close(e.CPU, e.Time)
			x.openSlice(e.CPU, e.Task, e.A, prev, e.Time, false)
		}
		x.seen(e.Task, e.CPU)
		return
	case EvProxyPick:
		x.proxyPick(e)
	}
	x.instant(e)
	switch e.Kind {
	case EvIPI: // Task unused
	case EvReschedIdle: // A is the donor
		x.seen(e.A, e.CPU)
	case EvProxyPick:
		x.seen(e.Task, e.CPU)
		x.seen(e.A, e.CPU)
	default:
		x.seen(e.Task, e.CPU)
	}
}

// openSlice starts a slice on cpu and binds the picks waiting for task to it.
func (x *exporter) openSlice(cpu, task, donor, prev int32, at int64, truncated bool) {
	t := &x.cpus[cpu]
	t.open, t.task, t.donor, t.prev, t.start, t.truncated = true, task, donor, prev, at, truncated
	t.flows = t.flows[:0]
	if truncated || len(t.waiting) == 0 {
		return
	}
	for _, f := range t.waiting {
		if f.owner == task {
			t.flows = append(t.flows, f)
		} else {
			// Another task ran instead: end the arrow at the pick.
			x.flowEnd(cpu, f.id, f.pick)
		}
	}
	t.waiting = t.waiting[:0]
}

// close ends cpu's open slice at end and writes it with its flow ends.
func (x *exporter) close(cpu int32, end int64) {
	t := &x.cpus[cpu]
	if !t.open {
		return
	}
	t.open = false
	if end < t.start {
		end = t.start
	}
	p := &x.p
	name, cat := x.sliceName(t.task), "sched"
	proxied := t.donor != t.task && t.donor != 0 && t.task >= 0
	if proxied {
		name += " (proxy for " + x.name(t.donor) + ")"
		cat = "sched,proxy"
	}
	if t.task < 0 {
		cat = "idle"
	}
	p.begin(name, cat, "X", t.start, int(cpu)+1)
	p.us("dur", end-t.start)
	if t.task < 0 {
		p.str("cname", "grey")
	}
	p.argsBegin()
	p.argStr("task", x.name(t.task))
	p.argInt("task_id", int64(t.task))
	if proxied {
		p.argStr("donor", x.name(t.donor))
		p.argInt("donor_id", int64(t.donor))
	}
	if t.prev != 0 {
		p.argStr("prev", x.name(t.prev))
	}
	if t.truncated {
		p.argBool("truncated", true)
	}
	p.argsEnd()
	p.done()
	for _, f := range t.flows {
		at := max(f.pick, t.start)
		if at == t.start && end-t.start >= 2 {
			at++
		}
		x.flowEnd(cpu, f.id, at)
	}
	t.flows = t.flows[:0]
}

func (x *exporter) proxyPick(e *Event) {
	x.flowID++
	id := x.flowID
	src, ok := x.lastSeen[e.A]
	if !ok {
		src = e.CPU
	}
	at := e.Time
	if st := &x.cpus[src]; st.open && st.start < at {
		at--
	}
	p := &x.p
	p.begin("proxy", "proxy", "s", at, int(src)+1)
	p.num("id", int64(id))
	p.argsBegin()
	p.argStr("owner", x.name(e.Task))
	p.argStr("donor", x.name(e.A))
	p.argInt("chain", int64(e.B))
	p.argsEnd()
	p.done()

	f := pendingFlow{id: id, owner: e.Task, pick: e.Time}
	t := &x.cpus[e.CPU]
	if t.open && t.task == e.Task {
		// prev == next: no EvSwitch follows. Split if the donor changed.
		if t.donor != e.A {
			prev := t.task
			x.close(e.CPU, e.Time)
			x.openSlice(e.CPU, e.Task, e.A, prev, e.Time, false)
		}
		t.flows = append(t.flows, f)
		return
	}
	t.waiting = append(t.waiting, f)
}

func (x *exporter) flowEnd(cpu int32, id uint64, at int64) {
	p := &x.p
	p.begin("proxy", "proxy", "f", at, int(cpu)+1)
	p.num("id", int64(id))
	p.str("bp", "e")
	p.done()
}

// finish closes the still-running slices at the end of the trace.
func (x *exporter) finish() {
	for c := range x.cpus {
		t := &x.cpus[c]
		x.close(int32(c), x.end)
		for _, f := range t.waiting {
			x.flowEnd(int32(c), f.id, f.pick)
		}
		t.waiting = nil
	}
}

func (x *exporter) instant(e *Event) {
	p := &x.p
	name := e.Kind.String()
	switch e.Kind {
	case EvMigrate:
		name = "migrate " + MigrateReason(e.C).String()
	case EvViolation:
		name = "VIOLATION invariant " + strconv.Itoa(int(e.A))
	}
	cat := "event"
	if e.Kind == EvViolation {
		cat = "violation"
	}
	p.begin(name, cat, "i", e.Time, int(e.CPU)+1)
	p.str("s", "t")
	if e.Kind == EvViolation {
		p.str("cname", "terrible")
	}
	p.argsBegin()
	task := func() {
		p.argStr("task", x.name(e.Task))
		p.argInt("task_id", int64(e.Task))
	}
	switch e.Kind {
	case EvMigrate:
		task()
		p.argInt("from", int64(e.A))
		p.argInt("to", int64(e.B))
		p.argStr("reason", MigrateReason(e.C).String())
	case EvWake:
		task()
		p.argInt("target_cpu", int64(e.A))
		p.argBool("wake_list", e.B == 1)
	case EvWakeRunnable, EvExit:
		task()
	case EvLock, EvDonorKeep:
		task()
		p.argInt("mutex", int64(e.A))
	case EvContend:
		task()
		p.argInt("mutex", int64(e.A))
		p.argStr("owner", x.name(e.B))
	case EvUnlock:
		task()
		p.argInt("mutex", int64(e.A))
		p.argStr("next_owner", x.name(e.B))
	case EvHandoff:
		task()
		p.argInt("mutex", int64(e.A))
		p.argBool("donor_handoff", e.B == 1)
	case EvBlock:
		task()
		p.argInt("state", int64(e.A))
		p.argBool("proxy_deactivate", e.B == 1)
	case EvProxyPick:
		p.argStr("owner", x.name(e.Task))
		p.argStr("donor", x.name(e.A))
		p.argInt("chain", int64(e.B))
	case EvReschedIdle:
		p.argStr("donor", x.name(e.A))
	case EvParkOnOwner, EvActivate:
		task()
		p.argStr("owner", x.name(e.A))
	case EvIsBlocked:
		task()
		p.argInt("is_blocked", int64(e.A))
	case EvBlockedOnClear, EvLockEINTR:
		task()
		p.argInt("mutex", int64(e.A))
	case EvSignal:
		task()
		p.argBool("fatal", e.A == 1)
		p.argBool("woken", e.B == 1)
	case EvSignalHandled:
		task()
		p.argBool("fatal", e.A == 1)
	case EvSpin:
		task()
		p.argInt("mutex", int64(e.A))
		p.argBool("waiter", e.B == 1)
	case EvSpinEnd:
		task()
		p.argInt("mutex", int64(e.A))
		p.argInt("how", int64(e.B))
		p.argInt("turns", int64(e.C))
	case EvCoreFlip:
		p.argBool("on", e.Task == 1)
	case EvWWWound, EvWWDie:
		task()
		p.argInt("mutex", int64(e.A))
		p.argStr("by", x.name(e.B))
	case EvWWBackoff:
		task()
		p.argInt("mutex", int64(e.A))
	case EvSpuriousWake:
		task()
		p.argInt("mutex", int64(e.A))
		p.argBool("woken", e.B == 1)
	case EvHotplug:
		p.argInt("cpu", int64(e.A))
		p.argInt("step", int64(e.B))
	case EvMigrateDisable:
		task()
		p.argInt("depth", int64(e.A))
	case EvIPI:
		p.argInt("target_cpu", int64(e.A))
		p.argInt("kind", int64(e.B))
	case EvPreempt:
		task()
		p.argStr("by", x.name(e.A))
	case EvSleep:
		task()
		p.argInt("until", int64(e.A))
	case EvViolation:
		p.argInt("invariant", int64(e.A))
		if e.Task != 0 {
			task()
		}
	case EvAffinity:
		task()
		p.argInt("first_cpu", int64(e.A))
	case EvSetPrio:
		task()
		p.argInt("prio", int64(e.A))
	case EvDLThrottle:
		task()
		p.argInt("runtime_us", int64(e.A))
		p.argBool("constrained", e.B == 1)
	case EvDLReplenish:
		task()
		p.argInt("runtime_us", int64(e.A))
		p.argInt("deadline_in_us", int64(e.B))
	case EvDLAdmission:
		task()
		p.argBool("refused", e.A != 0)
		if e.A >= 2 {
			p.argBool("mask_short_of_root_domain", true)
		}
	case EvLoadBalance:
		task()
		p.argInt("from", int64(e.A))
		p.argInt("to", int64(e.B))
	default:
		task()
		p.argInt("a", int64(e.A))
		p.argInt("b", int64(e.B))
		p.argInt("c", int64(e.C))
	}
	p.argInt("seq", int64(e.Seq))
	p.argsEnd()
	p.done()
}

// pw writes trace events one at a time through a reused buffer.
type pw struct {
	bw    *bufio.Writer
	b     []byte
	n     int // events written
	nargs int
}

func (p *pw) raw(s string) {
	p.b = append(p.b, s...)
	p.flush()
}

func (p *pw) flush() {
	_, _ = p.bw.Write(p.b) // errors are sticky: reported by Flush
	p.b = p.b[:0]
}

func (p *pw) sep() {
	if p.n > 0 {
		p.b = append(p.b, ',')
	}
	p.b = append(p.b, '\n')
	p.n++
}

// begin starts an event with name, cat, ph, ts, pid and tid.
func (p *pw) begin(name, cat, ph string, ts int64, tid int) {
	p.sep()
	p.b = append(p.b, `{"name":`...)
	p.b = appendJSONString(p.b, name)
	p.b = append(p.b, `,"cat":`...)
	p.b = appendJSONString(p.b, cat)
	p.b = append(p.b, `,"ph":"`...)
	p.b = append(p.b, ph...)
	p.b = append(p.b, `","ts":`...)
	p.b = appendMicros(p.b, ts)
	p.pidTid(tid)
}

// meta starts a metadata event (no ts).
func (p *pw) meta(name string, tid int) {
	p.sep()
	p.b = append(p.b, `{"name":`...)
	p.b = appendJSONString(p.b, name)
	p.b = append(p.b, `,"ph":"M"`...)
	p.pidTid(tid)
}

func (p *pw) pidTid(tid int) {
	p.b = append(p.b, `,"pid":`...)
	p.b = strconv.AppendInt(p.b, perfettoPID, 10)
	p.b = append(p.b, `,"tid":`...)
	p.b = strconv.AppendInt(p.b, int64(tid), 10)
}

func (p *pw) key(k string) {
	p.b = append(p.b, ',')
	p.b = appendJSONString(p.b, k)
	p.b = append(p.b, ':')
}

func (p *pw) us(k string, ns int64) {
	p.key(k)
	p.b = appendMicros(p.b, ns)
}

func (p *pw) str(k, v string) {
	p.key(k)
	p.b = appendJSONString(p.b, v)
}

func (p *pw) num(k string, v int64) {
	p.key(k)
	p.b = strconv.AppendInt(p.b, v, 10)
}

func (p *pw) argsBegin() {
	p.b = append(p.b, `,"args":{`...)
	p.nargs = 0
}

func (p *pw) argKey(k string) {
	if p.nargs > 0 {
		p.b = append(p.b, ',')
	}
	p.nargs++
	p.b = appendJSONString(p.b, k)
	p.b = append(p.b, ':')
}

func (p *pw) argStr(k, v string) {
	p.argKey(k)
	p.b = appendJSONString(p.b, v)
}

func (p *pw) argInt(k string, v int64) {
	p.argKey(k)
	p.b = strconv.AppendInt(p.b, v, 10)
}

func (p *pw) argBool(k string, v bool) {
	p.argKey(k)
	p.b = strconv.AppendBool(p.b, v)
}

func (p *pw) argsEnd() { p.b = append(p.b, '}') }

// done ends the event and hands it to the buffered writer.
func (p *pw) done() {
	p.b = append(p.b, '}')
	p.flush()
}

// appendMicros appends ns/1000 as an exact JSON decimal number.
func appendMicros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1000, 10)
	if frac := u % 1000; frac != 0 {
		d := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
		n := 3
		for d[n-1] == '0' {
			n--
		}
		b = append(b, '.')
		b = append(b, d[:n]...)
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
