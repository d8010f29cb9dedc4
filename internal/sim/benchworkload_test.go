package sim

import (
	"fmt"
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

// hackbench, 2 groups of 2 senders and 2 receivers, 3 loops, on 4 CPUs:
// every task exits; every message is a receiver's completed wait; a
// sender wakes only its own group's receivers, and a receiver is woken
// by its group's senders; receiver j of group g locks only pipe-g-j, and
// senders lock only their own group's pipes, each as often as a message
// crosses it.
func TestHackbenchWorkloadShape(t *testing.T) {
	for _, level := range []string{LevelOff, LevelSingleRQ, LevelFull} {
		t.Run(level, func(t *testing.T) {
			s, ev, names, mutexes := benchTrace(t, "hackbench:groups=2,fds=2,loops=3", 4, level, time.Second)
			b := s.Bench
			if b == nil || !b.Finished || b.TimeNs <= 0 || s.StopReason != StopAllExited {
				t.Fatalf("bench %+v stop %q: want finished", b, s.StopReason)
			}
			if b.Requests != 2*2*2*3 {
				t.Errorf("requests %d, want 24 (groups x fds x fds x loops)", b.Requests)
			}
			if s.Counters["exits"] != 8 {
				t.Errorf("exits %d, want 8", s.Counters["exits"])
			}
			sendersWoke := 0
			for k, n := range wakes(ev, names) {
				w, e, _ := strings.Cut(k, "->")
				if strings.TrimPrefix(group(w), "send-") != strings.TrimPrefix(strings.TrimPrefix(group(e), "send-"), "recv-") &&
					strings.TrimPrefix(group(w), "recv-") != strings.TrimPrefix(strings.TrimPrefix(group(e), "send-"), "recv-") {
					t.Errorf("%s (%d times): a wake-up across hackbench groups", k, n)
				}
				if strings.HasPrefix(w, "send-") && strings.HasPrefix(e, "recv-") {
					sendersWoke += n
				}
			}
			if sendersWoke == 0 {
				t.Errorf("no sender ever woke a receiver")
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
				// 2 senders x 3 writes, 6 reads
				if perPipe[mx] != 12 {
					t.Errorf("%s taken %d times, want 12 (6 writes, 6 reads)", mx, perPipe[mx])
				}
			}
		})
	}
}

// tbench, 2 clients on 2 CPUs: client i and server i wake only each
// other and are the only tasks to take sock-i; every request is answered.
func TestReqRespWorkloadShape(t *testing.T) {
	for _, bench := range []string{"tbench", "netperf"} {
		for _, level := range []string{LevelOff, LevelFull} {
			t.Run(bench+"/"+level, func(t *testing.T) {
				s, ev, names, mutexes := benchTrace(t, bench+":clients=2", 2, level, 3*time.Millisecond)
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
				for _, k := range []string{"client-0->server-0", "server-0->client-0", "client-1->server-1", "server-1->client-1"} {
					if w[k] == 0 {
						t.Errorf("no wake-up %s", k)
					}
				}
				for k := range locks(ev, names, mutexes) {
					who, mx, _ := strings.Cut(k, ":")
					if mx != "sock-"+index(who) {
						t.Errorf("%s takes %s, want sock-%s", who, mx, index(who))
					}
				}
				if len(mutexes) != 2 {
					t.Errorf("mutexes %v, want one per connection", mutexes)
				}
			})
		}
	}
}

// schbench, 2 message threads of 3 workers, 1 lock each, on 4 CPUs: a
// worker is woken only by its message thread (or by the unlock of a
// worker of the same thread handing over their mutex); worker k of
// message thread m takes only req-m-0; every round's wake-ups are served.
func TestSchbenchWorkloadShape(t *testing.T) {
	for _, level := range []string{LevelOff, LevelSingleRQ, LevelFull} {
		t.Run(level, func(t *testing.T) {
			s, ev, names, mutexes := benchTrace(t, "schbench:workers=3,mthreads=2,locks=1,interval_ns=100000", 4, level, 5*time.Millisecond)
			b := s.Bench
			// 50 rounds of 6 wake-ups in 5ms: nearly all served
			if b == nil || b.Requests < 250 || b.Requests > 300 {
				t.Fatalf("bench %+v: want about 300 requests", b)
			}
			if b.P99WakeupLatencyNs <= 0 || b.P99RequestLatencyNs < 35000 {
				t.Errorf("p99 wake-up %d ns, request %d ns: want both, the request at least the 35us of work", b.P99WakeupLatencyNs, b.P99RequestLatencyNs)
			}
			w := wakes(ev, names)
			for k, n := range w {
				a, e, _ := strings.Cut(k, "->")
				if !strings.HasPrefix(e, "worker-") {
					continue // message threads' timer wake-ups run on whatever is current
				}
				m := strings.TrimPrefix(group(e), "worker-")
				if a != "msg-"+m && group(a) != "worker-"+m {
					t.Errorf("%s (%d times): want msg-%s or a worker of it", k, n, m)
				}
			}
			for m := 0; m < 2; m++ {
				for k := 0; k < 3; k++ {
					if w[fmt.Sprintf("msg-%d->worker-%d-%d", m, m, k)] == 0 {
						t.Errorf("msg-%d never woke worker-%d-%d", m, m, k)
					}
				}
			}
			for k := range locks(ev, names, mutexes) {
				who, mx, _ := strings.Cut(k, ":")
				if want := "req-" + strings.TrimPrefix(group(who), "worker-") + "-0"; mx != want {
					t.Errorf("%s takes %s, want %s", who, mx, want)
				}
			}
		})
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
