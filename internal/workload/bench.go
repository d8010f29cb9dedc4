package workload

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/proxysim/proxysim/internal/task"
)

// Benchmark workloads: built-ins in the shape of the benchmarks of the
// proxy-execution series' A/B reports (hackbench, tbench, netperf,
// schbench). docs/benchmarks.md says how each maps to the real benchmark
// and what it leaves out. They are not in BuiltinNames (whose workloads the
// golden trace hashes pin); BenchmarkNames lists them.
//
// A benchmark takes parameters after a colon: "hackbench:groups=4,loops=10".

// MutexIndexPlus in an Op's MutexMode means mutex Op.Mutex + the task's
// index within its group, modulo Op.Count when Count > 0 (a group of
// tasks each owning one of a run of mutexes, such as hackbench's
// receivers and their pipes). Scenario files cannot express it.
const MutexIndexPlus = MutexByIndex + 1

// Merit kinds: what a benchmark's figure of merit measures.
const (
	MeritFinish     = "finish"     // time until every task has exited (hackbench)
	MeritThroughput = "throughput" // completed requests per virtual second (tbench, netperf)
	MeritLatency    = "latency"    // wake-up and request latency p99, requests per second (schbench)
	MeritChain      = "chain"      // a waiter's mutex waits behind a chain of locks and their unwinding (chain)
)

// Merit describes a benchmark workload's figure of merit.
type Merit struct {
	Bench string         // hackbench, tbench, netperf, schbench
	Kind  string         // MeritFinish, MeritThroughput, MeritLatency
	Case  int            // the benchmark's primary parameter (groups, clients, workers)
	Param map[string]int // every parameter, defaults filled in
	// Groups are the task groups whose completed waits count as requests
	// (servers, workers) and whose latencies are reported.
	Groups []int
}

type benchParam struct {
	name string
	def  int
	min  int
	max  int
	help string
}

type benchDef struct {
	name    string
	primary string // the parameter `ab --cases` varies
	params  []benchParam
	build   func(p map[string]int) *Scenario
	help    string
}

// reqRespParams are the parameters of the request/response benchmarks
// (tbench, netperf), with their compute defaults: per request at each
// end, and under the connection mutex per send or receive.
func reqRespParams(unit string, computeNs, copyNs int) []benchParam {
	return []benchParam{
		{"clients", 1, 1, 4096, "client/server pairs"},
		{"sock_lock", 1, 0, 1, "take the connection's mutex around each send and receive (1) or not (0)"},
		{"client_ns", computeNs, 0, 10000000, "client compute per " + unit},
		{"server_ns", computeNs, 0, 10000000, "server compute per " + unit},
		{"copy_ns", copyNs, 0, 1000000, "compute under the connection mutex per send or receive"},
	}
}

var benches = []benchDef{
	{name: "hackbench", primary: "groups", help: "groups of senders and receivers over pipes; figure: time to finish",
		params: []benchParam{
			{"groups", 1, 1, 64, "groups of fds senders and fds receivers"},
			{"fds", 20, 1, 64, "senders and receivers per group"},
			{"loops", 10, 1, 100000, "messages each sender writes to each receiver"},
			{"copy_ns", 1000, 0, 1000000, "compute inside the pipe mutex per read or write (the copy)"},
			{"syscall_ns", 1500, 0, 1000000, "compute outside the mutex per read or write (syscall entry, poll, accounting)"},
		}, build: hackbench},
	{name: "tbench", primary: "clients", help: "client/server request-response pairs; figure: requests per second",
		params: reqRespParams("request", 20000, 3000), build: func(p map[string]int) *Scenario { return reqResp("tbench", p) }},
	{name: "netperf", primary: "clients", help: "TCP_RR-style request-response pairs; figure: transactions per second",
		params: reqRespParams("transaction", 2000, 500), build: func(p map[string]int) *Scenario { return reqResp("netperf", p) }},
	{name: "schbench", primary: "workers", help: "message threads waking workers that compute and sleep; figures: wake-up and request latency p99, requests per second",
		params: []benchParam{
			{"workers", 4, 1, 4096, "worker threads per message thread"},
			{"mthreads", 2, 1, 256, "message threads"},
			{"locks", 1, 0, 4096, "mutexes the workers of one message thread share (0: none)"},
			{"think_ns", 30000, 0, 10000000, "worker compute per request, outside the mutex"},
			{"locked_ns", 5000, 0, 10000000, "worker compute per request inside the mutex"},
			{"interval_ns", 200000, 1000, 100000000, "time a message thread sleeps between rounds of wake-ups"},
		}, build: schbench},
	{name: "chain", primary: "links", help: "an RT task behind a chain of fair lock holders, one per CPU, whose last lock is held across a sleep, with FIFO hogs on every CPU; figures: the RT task's mutex wait (mean, p90, max) and the unwinding after the last lock's release",
		params: []benchParam{
			{"links", 7, 1, 1023, "fair chain links: link k runs on CPU k, holds m(k-1) and takes m(k)"},
			{"hold_ns", 50000, 0, 10000000, "compute of the RT task, of each link under its two locks, and of the owner after its sleep"},
			{"sleep_ns", 3000000, 1000, 1000000000, "the owner's sleep holding the last lock"},
			{"hogs", 1, 0, 1, "a FIFO 50 hog on every CPU of the chain (1) or none (0)"},
			{"hog_ns", 1000000, 1000, 100000000, "a hog's compute between its sleeps (+-10%)"},
			{"gap_ns", 200000, 1000, 100000000, "a hog's sleep (+-25%)"},
		}, build: chain},
}

// BenchmarkNames lists the benchmark workloads.
func BenchmarkNames() []string {
	var n []string
	for _, b := range benches {
		n = append(n, b.name)
	}
	sort.Strings(n)
	return n
}

// IsBenchmark says whether spec ("hackbench" or "hackbench:groups=2")
// names a benchmark workload.
func IsBenchmark(spec string) bool {
	name, _, _ := strings.Cut(spec, ":")
	return findBench(name) != nil
}

// BenchmarkPrimary is the parameter of a benchmark that `ab --cases`
// varies ("groups", "clients", "workers"), or "" if name is none.
func BenchmarkPrimary(name string) string {
	if b := findBench(name); b != nil {
		return b.primary
	}
	return ""
}

// BenchmarkHelp describes the benchmarks and their parameters.
func BenchmarkHelp() string {
	var sb strings.Builder
	for _, b := range benches {
		fmt.Fprintf(&sb, "%s: %s\n", b.name, b.help)
		for _, p := range b.params {
			fmt.Fprintf(&sb, "    %-12s default %-7d %s\n", p.name, p.def, p.help)
		}
	}
	return sb.String()
}

func findBench(name string) *benchDef {
	for i := range benches {
		if benches[i].name == name {
			return &benches[i]
		}
	}
	return nil
}

// Benchmark builds a benchmark workload from its spec: a name, then
// optionally ":" and comma-separated key=value parameters.
func Benchmark(spec string) (*Scenario, error) {
	name, args, _ := strings.Cut(spec, ":")
	b := findBench(name)
	if b == nil {
		return nil, fmt.Errorf("unknown benchmark %q (benchmarks: %s)", name, strings.Join(BenchmarkNames(), ", "))
	}
	p := map[string]int{}
	for _, d := range b.params {
		p[d.name] = d.def
	}
	if args != "" {
		for _, kv := range strings.Split(args, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok {
				return nil, fmt.Errorf("%s: parameter %q: want key=value", name, kv)
			}
			var d *benchParam
			for i := range b.params {
				if b.params[i].name == k {
					d = &b.params[i]
				}
			}
			if d == nil {
				var names []string
				for _, q := range b.params {
					names = append(names, q.name)
				}
				return nil, fmt.Errorf("%s: unknown parameter %q (parameters: %s)", name, k, strings.Join(names, ", "))
			}
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("%s: parameter %s: want an integer, not %q", name, k, v)
			}
			if n < d.min || n > d.max {
				return nil, fmt.Errorf("%s: parameter %s=%d out of range %d-%d", name, k, n, d.min, d.max)
			}
			p[k] = n
		}
	}
	sc := b.build(p)
	sc.Merit.Bench, sc.Merit.Case, sc.Merit.Param = b.name, p[b.primary], p
	return sc, nil
}

func wakeTask(group, index int) Op {
	o := mk(task.Op{Kind: task.OpWake})
	o.TargetGroup, o.TargetIndex = group, index
	return o
}
func wait() Op { return mk(task.Op{Kind: task.OpWait}) }
func lockFixed(m int) Op {
	return mk(task.Op{Kind: task.OpLock, Mutex: m})
}
func unlockFixed(m int) Op {
	return mk(task.Op{Kind: task.OpUnlock, Mutex: m})
}
func lockPlus(base int) Op {
	o := mk(task.Op{Kind: task.OpLock, Mutex: base})
	o.MutexMode = MutexIndexPlus
	return o
}
func unlockPlus(base int) Op {
	o := mk(task.Op{Kind: task.OpUnlock, Mutex: base})
	o.MutexMode = MutexIndexPlus
	return o
}
func lockPlusMod(base, n int) Op {
	o := lockPlus(base)
	o.Count = n
	return o
}
func unlockPlusMod(base, n int) Op {
	o := unlockPlus(base)
	o.Count = n
	return o
}
func loopN(to, n int) Op { return mk(task.Op{Kind: task.OpLoop, Jump: to, Count: n}) }
func exit() Op           { return mk(task.Op{Kind: task.OpExit}) }
func fixedCompute(ns int) Op {
	return compute(int64(ns), int64(ns))
}
func jitterCompute(ns int) Op { // +-25%: breaks the lockstep of identical tasks
	return compute(int64(ns)*3/4, int64(ns)*5/4)
}

// hackbench (pipe mode): per group, fds receivers (group "recv-G") each
// reading from its own pipe and fds senders (group "send-G") writing loops
// messages to every receiver of their group. A write is pipe_write():
// the pipe's mutex around the copy, then the wake-up of the reader; a
// read is wait-for-data, then pipe_read() under the same mutex. Receivers
// exit after fds*loops messages, senders after their last write.
func hackbench(p map[string]int) *Scenario {
	groups, fds, loops := p["groups"], p["fds"], p["loops"]
	sc := &Scenario{Name: fmt.Sprintf("hackbench:groups=%d", groups), Merit: &Merit{Kind: MeritFinish}}
	for g := 0; g < groups; g++ {
		for j := 0; j < fds; j++ {
			sc.Mutexes = append(sc.Mutexes, fmt.Sprintf("pipe-%d-%d", g, j))
		}
	}
	for g := 0; g < groups; g++ {
		base := g * fds
		recv := len(sc.Groups)
		sc.Groups = append(sc.Groups, Group{Name: fmt.Sprintf("recv-%d", g), Count: fds, Policy: task.Normal, Program: []Op{
			/* 0 */ wait(), // pipe_wait_readable: sleeps until a writer's wake-up
			/* 1 */ jitterCompute(p["syscall_ns"]),
			/* 2 */ lockPlus(base), // __pipe_lock(pipe)
			/* 3 */ fixedCompute(p["copy_ns"]),
			/* 4 */ unlockPlus(base),
			/* 5 */ loopN(0, fds*loops),
			/* 6 */ exit(),
		}})
		var prog []Op
		for j := 0; j < fds; j++ {
			prog = append(prog,
				jitterCompute(p["syscall_ns"]),
				lockFixed(base+j), // __pipe_lock(pipe)
				fixedCompute(p["copy_ns"]),
				unlockFixed(base+j),
				wakeTask(recv, j), // wake_up_interruptible_sync_poll(&pipe->rd_wait)
			)
		}
		prog = append(prog, loopN(0, loops), exit())
		sc.Groups = append(sc.Groups, Group{Name: fmt.Sprintf("send-%d", g), Count: fds, Policy: task.Normal, Program: prog})
		sc.Merit.Groups = append(sc.Merit.Groups, recv)
	}
	return sc
}

// reqResp (tbench, netperf): clients pairs. Client i computes, sends under
// connection i's mutex, wakes server i and waits for the reply; server i
// waits, receives under the same mutex, computes, sends the reply under
// it and wakes client i. Requests are the servers' completed waits.
func reqResp(name string, p map[string]int) *Scenario {
	n := p["clients"]
	sc := &Scenario{Name: fmt.Sprintf("%s:clients=%d", name, n), Merit: &Merit{Kind: MeritThroughput, Groups: []int{1}}}
	for i := 0; i < n; i++ {
		sc.Mutexes = append(sc.Mutexes, fmt.Sprintf("sock-%d", i))
	}
	locked := func(ops ...Op) []Op {
		if p["sock_lock"] == 0 {
			return []Op{fixedCompute(p["copy_ns"])}
		}
		return append([]Op{lockPlus(0)}, append(ops, unlockPlus(0))...)
	}
	var client []Op
	client = append(client, jitterCompute(p["client_ns"]))
	client = append(client, locked(fixedCompute(p["copy_ns"]))...) // send
	client = append(client, wakeTask(1, Self), wait())
	client = append(client, locked(fixedCompute(p["copy_ns"]))...) // receive the reply
	client = append(client, loop(0))
	var server []Op
	server = append(server, wait())
	server = append(server, locked(fixedCompute(p["copy_ns"]))...) // receive
	server = append(server, jitterCompute(p["server_ns"]))
	server = append(server, locked(fixedCompute(p["copy_ns"]))...) // send the reply
	server = append(server, wakeTask(0, Self), loop(0))
	sc.Groups = []Group{
		{Name: "client", Count: n, Policy: task.Normal, Program: client},
		{Name: "server", Count: n, Policy: task.Normal, Program: server},
	}
	return sc
}

// schbench: mthreads message threads; each wakes its workers every
// interval. A worker waits for its wake-up, thinks, does part of the
// request under one of its message thread's mutexes, and waits again.
// Wake-up latency is from try_to_wake_up to running; request latency
// from the message thread's wake-up call to the worker's next wait.
func schbench(p map[string]int) *Scenario {
	mt, w, nl := p["mthreads"], p["workers"], p["locks"]
	sc := &Scenario{Name: fmt.Sprintf("schbench:workers=%d", w), Merit: &Merit{Kind: MeritLatency}}
	for m := 0; m < mt; m++ {
		for l := 0; l < nl; l++ {
			sc.Mutexes = append(sc.Mutexes, fmt.Sprintf("req-%d-%d", m, l))
		}
	}
	for m := 0; m < mt; m++ {
		msgGroup := len(sc.Groups)
		var msg []Op
		for k := 0; k < w; k++ {
			msg = append(msg, wakeTask(msgGroup+1, k))
		}
		msg = append(msg, sleep(int64(p["interval_ns"]), int64(p["interval_ns"])), loop(0))
		sc.Groups = append(sc.Groups, Group{Name: fmt.Sprintf("msg-%d", m), Count: 1, Policy: task.Normal, Program: msg})
		worker := []Op{wait(), jitterCompute(p["think_ns"])}
		if nl > 0 {
			// worker k takes req-m-(k mod locks)
			worker = append(worker, lockPlusMod(m*nl, nl), jitterCompute(p["locked_ns"]), unlockPlusMod(m*nl, nl))
		} else {
			worker = append(worker, jitterCompute(p["locked_ns"]))
		}
		worker = append(worker, loop(0))
		sc.Groups = append(sc.Groups, Group{Name: fmt.Sprintf("worker-%d", m), Count: w, Policy: task.Normal, Program: worker})
		sc.Merit.Groups = append(sc.Merit.Groups, msgGroup+1)
	}
	return sc
}

// chain: an RT task (FIFO 90, CPU 0) takes m0 every 1-3 ms; link k (fair,
// CPU k, k = 1..links) sleeps 0.1-0.3 ms, then holds m(k-1) while it takes
// m(k), so that the chain is whole soon after it unwinds; the owner (fair,
// on the last link's CPU) holds the last lock across a sleep of sleep_ns,
// then computes and releases it, and stays away as long. With hogs, a FIFO 50 task on every CPU of the chain
// computes about hog_ns and sleeps about gap_ns (jittered, so that the
// hogs' idle windows drift apart instead of lining up on every CPU): a
// fair link runs only in its hog's idle window, unless a donor of higher
// priority lends it its scheduling context. The figures are the RT task's
// waits for m0 and the unwinding, from the owner's release of the last
// lock to the RT task's acquisition of m0 (Scenario.Chain).
func chain(p map[string]int) *Scenario {
	n, hold, sl := p["links"], int64(p["hold_ns"]), int64(p["sleep_ns"])
	sc := &Scenario{Name: fmt.Sprintf("chain:links=%d", n), Merit: &Merit{Kind: MeritChain, Groups: []int{0}}}
	for k := 0; k <= n; k++ {
		sc.Mutexes = append(sc.Mutexes, fmt.Sprintf("m%d", k))
	}
	sc.Groups = append(sc.Groups, Group{Name: "rt", Count: 1, Policy: task.FIFO, Prio: 90, CPUs: "0", Program: []Op{
		sleep(1_000_000, 3_000_000), lockFixed(0), fixedCompute(int(hold)), unlockFixed(0), loop(0),
	}})
	for k := 1; k <= n; k++ {
		sc.Groups = append(sc.Groups, Group{Name: fmt.Sprintf("link%d", k), Count: 1, Policy: task.Normal, CPUs: strconv.Itoa(k), Program: []Op{
			sleep(100_000, 300_000), lockFixed(k - 1), lockFixed(k), fixedCompute(int(hold)), unlockFixed(k), unlockFixed(k - 1), loop(0),
		}})
	}
	sc.Groups = append(sc.Groups, Group{Name: "owner", Count: 1, Policy: task.Normal, CPUs: strconv.Itoa(n), Program: []Op{
		lockFixed(n), sleep(sl, sl), fixedCompute(int(hold)), unlockFixed(n), sleep(sl, sl), loop(0),
	}})
	if p["hogs"] == 1 {
		on, off := int64(p["hog_ns"]), int64(p["gap_ns"])
		spread := mk(task.Op{Kind: task.OpAffinity, Count: AffinitySpread})
		sc.Groups = append(sc.Groups, Group{Name: "hog", Count: n + 1, Policy: task.FIFO, Prio: 50, Program: []Op{
			spread, compute(on*9/10, on*11/10), sleep(off*3/4, off*5/4), loop(1),
		}})
	}
	sc.Chain = &Chain{Waiter: 0, Head: 0, End: n}
	return sc
}
