package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/trace"
	"github.com/proxysim/proxysim/internal/workload"
)

// benchTrace runs a benchmark workload deterministically with a flight
// recorder big enough to keep every event, and returns the summary, the
// events, each task's name by id and each mutex's name by id.
func benchTrace(t *testing.T, spec string, cpus int, level string, simTime time.Duration) (*Summary, []trace.Event, map[int32]string, []string) {
	t.Helper()
	sc, err := workload.Benchmark(spec)
	if err != nil {
		t.Fatal(err)
	}
	o := Defaults()
	o.Workload, o.CPUs, o.SimTime, o.Seed = spec, cpus, simTime, 3
	o.Deterministic, o.Strategy = true, "time"
	o.RingSize = 1 << 20
	if !o.SetProxyLevel(level) {
		t.Fatal(level)
	}
	r, err := Build(o, sc)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Execute()
	if s.Failed() {
		t.Fatalf("%s %s: %v", spec, level, s.Violations[0])
	}
	ev := r.Machine.Log.Merged(0)
	if len(ev) == 0 || uint64(len(ev)) != r.Machine.Log.Seq() {
		t.Fatalf("flight recorder kept %d of %d events: raise RingSize", len(ev), r.Machine.Log.Seq())
	}
	names := map[int32]string{}
	for _, p := range r.Machine.Tasks() {
		if p != nil {
			names[int32(p.ID)] = p.Name
		}
	}
	return s, ev, names, sc.Mutexes
}

// wakes lists "waker->wakee" for every wake-up a task issued: the waker
// is the task current on the waking CPU (the flight recorder's switch
// events say which).
func wakes(ev []trace.Event, names map[int32]string) map[string]int {
	curr := map[int32]int32{}
	out := map[string]int{}
	for _, e := range ev {
		switch e.Kind {
		case trace.EvSwitch:
			curr[e.CPU] = e.Task
		case trace.EvWake:
			if w, ok := names[curr[e.CPU]]; ok {
				out[w+"->"+names[e.Task]]++
			}
		}
	}
	return out
}

// locks lists "task:mutex" for every acquisition.
func locks(ev []trace.Event, names map[int32]string, mutexes []string) map[string]int {
	out := map[string]int{}
	for _, e := range ev {
		if e.Kind == trace.EvLock {
			out[names[e.Task]+":"+mutexes[e.A]]++
		}
	}
	return out
}

// group is a task name's group ("send-1-3" -> "send-1"; "msg-0" stays).
func group(name string) string {
	if i := strings.LastIndex(name, "-"); i > 0 && strings.Count(name, "-") > 1 {
		return name[:i]
	}
	return name
}

func index(name string) string { return name[strings.LastIndex(name, "-")+1:] }

// benchRun runs a benchmark deterministically with the given extra
// options and returns the summary and its events (benchTrace).
func benchRunOpts(t *testing.T, spec string, cpus int, level string, simTime time.Duration, opt func(*Options)) (*Summary, []trace.Event, map[int32]string, []string) {
	t.Helper()
	sc, err := workload.Benchmark(spec)
	if err != nil {
		t.Fatal(err)
	}
	o := Defaults()
	o.Workload, o.CPUs, o.SimTime, o.Seed = spec, cpus, simTime, 3
	o.Deterministic, o.Strategy = true, "time"
	o.RingSize = 1 << 20
	if !o.SetProxyLevel(level) {
		t.Fatal(level)
	}
	if opt != nil {
		opt(&o)
	}
	r, err := Build(o, sc)
	if err != nil {
		t.Fatal(err)
	}
	s := r.Execute()
	if s.Failed() {
		t.Fatalf("%s %s: %v", spec, level, s.Violations[0])
	}
	ev := r.Machine.Log.Merged(0)
	if len(ev) == 0 || uint64(len(ev)) != r.Machine.Log.Seq() {
		t.Fatalf("flight recorder kept %d of %d events: raise RingSize", len(ev), r.Machine.Log.Seq())
	}
	names := map[int32]string{}
	for _, p := range r.Machine.Tasks() {
		if p != nil {
			names[int32(p.ID)] = p.Name
		}
	}
	return s, ev, names, sc.Mutexes
}

// woken counts the wake-ups of each task (a full one, or ttwu_runnable's
// of a task still queued: DELAY_DEQUEUE keeps a fair sleeper queued).
func woken(ev []trace.Event, names map[int32]string) map[string]int {
	out := map[string]int{}
	for _, e := range ev {
		if e.Kind == trace.EvWake || e.Kind == trace.EvWakeRunnable {
			out[names[e.Task]]++
		}
	}
	return out
}

// contended counts, per mutex name, the contended acquisitions the
// events show: optimistic spins started and waiters queued.
func contended(ev []trace.Event, mutexes []string) map[string]int {
	out := map[string]int{}
	for _, e := range ev {
		if e.Kind == trace.EvSpin && e.B == 0 || e.Kind == trace.EvContend {
			out[mutexes[e.A]]++
		}
	}
	return out
}

// sameGroup reports whether two hackbench task names belong to one group
// ("send-1-3", "recv-1-0").
func sameGroup(a, b string) bool {
	g := func(n string) string {
		return strings.TrimPrefix(strings.TrimPrefix(group(n), "send-"), "recv-")
	}
	return g(a) == g(b)
}

// hackbench over pipes (hackbench -p), 2 groups of 3 senders and 3
// receivers, 40 loops, rings of 2 pages (80 messages) so that writers
// find them full: every message is read, every task exits; a receiver
// takes only its own pipe->mutex and senders only their group's; each
// pipe's mutex is taken at least once per write and per read; writers wait
// on full pipes and readers on empty ones; every wake-up stays within a
// group.
func TestHackbenchPipeShape(t *testing.T) {
	for _, level := range []string{LevelOff, LevelSingleRQ, LevelFull} {
		t.Run(level, func(t *testing.T) {
			s, ev, names, mutexes := benchTrace(t, "hackbench:groups=2,fds=3,loops=40,pipe=1,pipe_bufs=2", 4, level, time.Second)
			b := s.Bench
			if b == nil || !b.Finished || b.TimeNs <= 0 || s.StopReason != StopAllExited {
				t.Fatalf("bench %+v stop %q: want finished", b, s.StopReason)
			}
			if b.Requests != 2*3*3*40 || s.Counters["exits"] != 12 {
				t.Errorf("requests %d exits %d, want 720 (groups x fds x fds x loops) and 12", b.Requests, s.Counters["exits"])
			}
			if s.Counters["pipe_full"] == 0 || s.Counters["pipe_empty"] == 0 {
				t.Errorf("pipe_full %d pipe_empty %d: want writers to wait on full rings and readers on empty pipes", s.Counters["pipe_full"], s.Counters["pipe_empty"])
			}
			for k, n := range wakes(ev, names) {
				w, e, _ := strings.Cut(k, "->")
				if !sameGroup(w, e) {
					t.Errorf("%s (%d times): a wake-up across hackbench groups", k, n)
				}
			}
			perPipe := map[string]int{}
			for k, n := range locks(ev, names, mutexes) {
				who, mx, _ := strings.Cut(k, ":")
				g := strings.TrimPrefix(strings.TrimPrefix(group(who), "send-"), "recv-")
				if !strings.HasPrefix(mx, "pipe-"+g+"-") {
					t.Errorf("%s takes %s, a pipe of another group", who, mx)
				}
				if strings.HasPrefix(who, "recv-") && mx != "pipe-"+g+"-"+index(who) {
					t.Errorf("%s takes %s, not its own pipe", who, mx)
				}
				perPipe[mx] += n
			}
			for _, mx := range mutexes {
				// 3 senders x 40 writes, 120 reads; more when a path
				// re-locks after a wait
				if perPipe[mx] < 240 {
					t.Errorf("%s taken %d times, want at least 240 (120 writes, 120 reads)", mx, perPipe[mx])
				}
			}
		})
	}
}

// hackbench over pipes contends pipe->mutex, and only it: one group of
// 20 writers per pipe, as the real benchmark, on 8 CPUs. With optimistic spinning
// the contended lockers spin on running owners; without it they queue,
// and proxy execution engages on those waiters: single-rq deactivates
// donors of owners on other CPUs, full proxy-migrates them. The test
// fails if the model stops taking the pipe's mutex or stops contending it.
func TestHackbenchPipeContendsPipeMutex(t *testing.T) {
	const spec = "hackbench:groups=1,fds=20,loops=10,pipe=1"
	s, ev, _, mutexes := benchTrace(t, spec, 8, LevelOff, time.Second)
	c := contended(ev, mutexes)
	total := 0
	for mx, n := range c {
		if !strings.HasPrefix(mx, "pipe-") {
			t.Errorf("%s contended %d times: hackbench has only pipe mutexes", mx, n)
		}
		total += n
	}
	if total == 0 || s.Counters["mutex_fastpath_misses"] == 0 {
		t.Fatalf("pipe mutexes never contended (fast-path misses %d): 20 writers per pipe on 8 CPUs must meet", s.Counters["mutex_fastpath_misses"])
	}
	noSpin := func(o *Options) { o.NoOptimisticSpin = true }
	off, _, _, _ := benchRunOpts(t, spec, 8, LevelOff, time.Second, noSpin)
	single, _, _, _ := benchRunOpts(t, spec, 8, LevelSingleRQ, time.Second, noSpin)
	full, _, _, _ := benchRunOpts(t, spec, 8, LevelFull, time.Second, noSpin)
	if off.Counters["mutex_contentions"] == 0 {
		t.Errorf("no pipe->mutex waiter queued without optimistic spinning")
	}
	if single.Counters["proxy_deactivations"] == 0 || single.Counters["proxy_migrations"] != 0 {
		t.Errorf("single-rq: deactivations %d, proxy migrations %d: want some, none", single.Counters["proxy_deactivations"], single.Counters["proxy_migrations"])
	}
	if full.Counters["proxy_migrations"] == 0 {
		t.Errorf("full: no proxy migration of a pipe->mutex donor")
	}
}

// hackbench over unix stream sockets (the default): senders take no
// mutex; a receiver takes only its own socket's u->iolock, once per read
// and again after each wait, and with one reader per socket it never
// contends it; a small sk_sndbuf makes senders wait for sk_wmem_alloc to
// drop, and every message still arrives.
func TestHackbenchSocketShape(t *testing.T) {
	s, ev, names, mutexes := benchTrace(t, "hackbench:groups=2,fds=3,loops=40,sndbuf=4096", 4, LevelFull, time.Second)
	b := s.Bench
	if b == nil || !b.Finished || b.Requests != 2*3*3*40 {
		t.Fatalf("bench %+v: want finished, 720 messages", b)
	}
	if s.Counters["sndbuf_waits"] == 0 || s.Counters["sock_empty"] == 0 {
		t.Errorf("sndbuf_waits %d sock_empty %d: want senders waiting for wmem and readers for data", s.Counters["sndbuf_waits"], s.Counters["sock_empty"])
	}
	reads := 0
	for k, n := range locks(ev, names, mutexes) {
		who, mx, _ := strings.Cut(k, ":")
		if !strings.HasPrefix(who, "recv-") {
			t.Errorf("%s takes %s: unix_stream_sendmsg takes no mutex", who, mx)
		}
		if want := "iolock-" + strings.TrimPrefix(group(who), "recv-") + "-" + index(who); mx != want {
			t.Errorf("%s takes %s, want %s (its own socket's u->iolock)", who, mx, want)
		}
		reads += n
	}
	if reads < 720 {
		t.Errorf("u->iolock taken %d times, want at least one per message (720)", reads)
	}
	if c := contended(ev, mutexes); len(c) != 0 {
		t.Errorf("u->iolock contended %v: one reader per socket never meets another", c)
	}
	if s.Counters["proxy_migrations"]+s.Counters["find_proxy_task_calls"] != 0 {
		t.Errorf("proxy execution engaged (%d migrations, %d find_proxy_task calls) without a mutex waiter", s.Counters["proxy_migrations"], s.Counters["find_proxy_task_calls"])
	}
}

// tbench and netperf over loopback TCP, 2 connections on 4 CPUs: client
// i and server i wake only each other; every send and receive takes
// lock_sock, and no task takes a mutex (lock_sock is sk_lock.slock and the
// owned flag, not a struct mutex), so proxy execution never engages and
// off and full run the same schedule; every request is answered.
func TestReqRespShape(t *testing.T) {
	for _, bench := range []string{"tbench", "netperf"} {
		hashes := map[string]string{}
		for _, level := range []string{LevelOff, LevelFull} {
			t.Run(bench+"/"+level, func(t *testing.T) {
				s, ev, names, _ := benchTrace(t, bench+":clients=2", 4, level, 3*time.Millisecond)
				if s.Bench == nil || s.Bench.Requests < 10 || s.Bench.RequestsPerSec <= 0 {
					t.Fatalf("bench %+v: want requests served", s.Bench)
				}
				w := wakes(ev, names)
				for k, n := range w {
					a, b, _ := strings.Cut(k, "->")
					if index(a) != index(b) || group(a) == group(b) {
						t.Errorf("%s (%d times): want client i <-> server i only", k, n)
					}
				}
				// (a wake-up through the target's wake list is recorded on
				// the target CPU, not attributed to a waker)
				got := woken(ev, names)
				for _, k := range []string{"server-0", "client-0", "server-1", "client-1"} {
					if got[k] == 0 {
						t.Errorf("%s never woken", k)
					}
				}
				if s.Counters["mutex_acquires"] != 0 || s.Counters["sock_empty"] == 0 {
					t.Errorf("mutex acquisitions %d, empty receive queues %d: want none, some", s.Counters["mutex_acquires"], s.Counters["sock_empty"])
				}
				// a transaction takes lock_sock four times at least: the
				// client's send and receive, the server's receive and send
				if s.Counters["sock_locks"] < 4*s.Bench.Requests {
					t.Errorf("lock_sock taken %d times for %d transactions, want at least 4 each", s.Counters["sock_locks"], s.Bench.Requests)
				}
				hashes[level] = s.TraceHash
			})
		}
		if hashes[LevelOff] != hashes[LevelFull] {
			t.Errorf("%s: off and full ran different schedules (%s, %s) with no mutex in the workload", bench, hashes[LevelOff], hashes[LevelFull])
		}
	}
}

// schbench (v1.x), one message thread of 6 workers on 4 CPUs with 2 ms
// of work: the message thread wakes only its workers and they only it,
// over futexes (FUTEX_WAIT and FUTEX_WAKE both happen, no mutex is
// taken); requests complete and the user-space wake-up latency is
// recorded; with more workers than CPUs the per-CPU user lock is met
// held and spun on.
func TestSchbenchShape(t *testing.T) {
	s, ev, names, _ := benchTrace(t, "schbench:workers=6,work_ns=2000000", 4, LevelFull, 50*time.Millisecond)
	b := s.Bench
	if b == nil || b.Requests < 40 || b.P99WakeupLatencyNs <= 0 || b.P99RequestLatencyNs < 2000000 {
		t.Fatalf("bench %+v: want requests of at least the 2ms of work, a wake-up latency", b)
	}
	for k, n := range wakes(ev, names) {
		a, e, _ := strings.Cut(k, "->")
		if (a == "msg-0") == (group(e) == "msg-0" || e == "msg-0") && !strings.HasPrefix(a, "worker-0") {
			t.Errorf("%s (%d times): want msg-0 <-> its workers", k, n)
		}
	}
	if w := wakes(ev, names); w["msg-0->worker-0-0"] == 0 || w["worker-0-0->msg-0"]+w["worker-0-1->msg-0"]+w["worker-0-2->msg-0"] == 0 {
		t.Errorf("wake-ups %v: want the message thread to wake workers and workers to wake it", w)
	}
	if s.Counters["futex_waits"] == 0 || s.Counters["futex_wakes"] == 0 || s.Counters["mutex_acquires"] != 0 {
		t.Errorf("futex waits %d wakes %d, mutex acquisitions %d: want futexes and no kernel mutex",
			s.Counters["futex_waits"], s.Counters["futex_wakes"], s.Counters["mutex_acquires"])
	}
	if s.Counters["uspin_turns"] == 0 {
		t.Errorf("no turn of the per-CPU user lock's trylock spin with 6 workers on 4 CPUs")
	}
}

// inversion: the RT thread and the fair holders contend their kernel
// mutex; with the hogs keeping every CPU busy a fair holder runs slowly
// while it holds the mutex, and proxy execution (full) runs it on the RT
// waiter's behalf: the RT thread's mean wait drops well below off's.
func TestInversionHelps(t *testing.T) {
	const spec = "inversion:hogs=8,holders=2"
	off, ev, _, mutexes := benchTrace(t, spec, 4, LevelOff, 100*time.Millisecond)
	full, _, _, _ := benchTrace(t, spec, 4, LevelFull, 100*time.Millisecond)
	c := contended(ev, mutexes)
	if c["shared-0"] == 0 {
		t.Fatalf("shared-0 never contended: %v", c)
	}
	ro, rf := off.Bench.Wait("rt"), full.Bench.Wait("rt")
	if ro.N == 0 || rf.N == 0 {
		t.Fatalf("RT waits off %+v full %+v: want some in both", ro, rf)
	}
	if rf.MeanNs*2 > ro.MeanNs {
		t.Errorf("RT mean wait off %d ns, full %d ns: want full's at most half off's", ro.MeanNs, rf.MeanNs)
	}
	if full.Counters["proxy_migrations"]+full.Counters["proxy_pick_same_rq"] == 0 {
		t.Errorf("full: the RT waiter never donated to the holder")
	}
}

// Benchmarks stay out of BuiltinNames (the golden hashes' list) and the
// hackbench run stops when it finishes.
func TestBenchmarksNotGolden(t *testing.T) {
	for _, b := range workload.BenchmarkNames() {
		for _, n := range workload.BuiltinNames() {
			if b == n {
				t.Errorf("benchmark %s is in BuiltinNames: the golden trace hashes would change", b)
			}
		}
		if !IsBuiltin(b + ":") {
			t.Errorf("IsBuiltin(%q) false", b+":")
		}
	}
}
