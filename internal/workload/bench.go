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
	MeritInversion  = "inversion"  // mutex waits by scheduling class, critical sections per second (inversion)
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

// The benchmarks' parameters. The first of each is the case parameter
// (`ab --cases`). Counts and sizes are the real benchmarks' defaults; the
// compute times are docs/benchmarks.md's measurements ("Where the compute
// times come from").
var benches = []benchDef{
	{name: "hackbench", primary: "groups", help: "groups of senders and receivers over unix stream sockets (default, as hackbench) or pipes (pipe=1); figure: time to finish",
		params: []benchParam{
			{"groups", 10, 1, 64, "groups of fds senders and fds receivers"},
			{"fds", 20, 1, 64, "senders and receivers per group (hackbench -f)"},
			{"loops", 100, 1, 100000, "messages each sender writes to each receiver (hackbench -l)"},
			{"datasize", 100, 1, 4096, "bytes per message (hackbench -s)"},
			{"pipe", 0, 0, 1, "1: pipes (hackbench -p: pipe->mutex, 20 writers per pipe); 0: unix stream sockets (u->iolock, one reader each)"},
			{"pipe_bufs", 16, 2, 256, "a pipe's ring in pages (PIPE_DEF_BUFFERS)"},
			{"sndbuf", 212992, 4096, 1 << 26, "a socket's sk_sndbuf in bytes (net.core.wmem_default)"},
			{"truesize", 768, 64, 1 << 20, "a message skb's truesize in bytes (alloc_skb of datasize bytes: a 512-byte kmalloc, struct sk_buff)"},
			{"pipe_syscall_ns", 470, 0, 1000000, "pipes: compute per write or read outside pipe->mutex (entry and exit, fdget_pos, vfs_write / vfs_read)"},
			{"pipe_copy_ns", 150, 0, 1000000, "pipes: compute per write or read under pipe->mutex (the buffer's bookkeeping, copy_page_from_iter / _to_iter)"},
			{"sock_send_ns", 2350, 0, 1000000, "sockets: compute per write (entry and exit, sock_write_iter, the skb's allocation and copy)"},
			{"sock_recv_ns", 1490, 0, 1000000, "sockets: compute per read outside u->iolock"},
			{"sock_copy_ns", 860, 0, 1000000, "sockets: compute per read under u->iolock (skb_copy_datagram_iter, consume_skb)"},
		}, build: hackbench},
	{name: "tbench", primary: "clients", help: "client/server pairs over loopback TCP; figure: transactions per second",
		params: reqRespParams(), build: func(p map[string]int) *Scenario { return reqResp("tbench", p) }},
	{name: "netperf", primary: "clients", help: "TCP_RR pairs over loopback TCP (1-byte request and response); figure: transactions per second",
		params: reqRespParams(), build: func(p map[string]int) *Scenario { return reqResp("netperf", p) }},
	{name: "schbench", primary: "workers", help: "schbench (v1.x): message threads and their workers over futexes; figures: wake-up and request latency p99, requests per second",
		params: []benchParam{
			{"workers", 4, 1, 4096, "worker threads per message thread (schbench -t)"},
			{"mthreads", 1, 1, 256, "message threads (schbench -m)"},
			{"work_ns", 16864000, 0, 1000000000, "matrix math per request (-F 256 -n 5: the README's calibration run)"},
			{"sleep_ns", 100000, 0, 100000000, "the usleep before the work (usleep(100))"},
			{"slack_ns", 50000, 0, 100000000, "timer slack added to that sleep (timer_slack_ns, 50 us)"},
			{"locking", 1, 0, 1, "take the per-CPU user lock around the work (schbench -L: 0)"},
			{"futex_ns", 620, 0, 1000000, "compute per FUTEX_WAIT or FUTEX_WAKE system call (its entry and exit)"},
		}, build: schbench},
	{name: "inversion", primary: "hogs", help: "priority inversion: an RT thread and fair threads share a kernel mutex, fair CPU hogs load the machine; figures: the RT thread's mutex wait p99, the fair holders' critical sections per second",
		params: []benchParam{
			{"hogs", 32, 0, 4096, "fair CPU-bound tasks that take no lock"},
			{"rt", 1, 1, 64, "SCHED_FIFO threads, one mutex each"},
			{"holders", 4, 1, 64, "fair threads per mutex"},
			{"period_ns", 1000000, 1000, 1000000000, "the RT thread's period (an audio or binder-like request every period)"},
			{"rt_hold_ns", 20000, 0, 100000000, "the RT thread's work under the mutex"},
			{"hold_ns", 100000, 0, 100000000, "a fair holder's work under the mutex"},
			{"think_ns", 400000, 0, 100000000, "a fair holder's work outside the mutex"},
		}, build: inversion},
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

// reqRespParams are tbench's and netperf's parameters: the model has no
// loadfile, so the two differ only in name (docs/benchmarks.md).
func reqRespParams() []benchParam {
	return []benchParam{
		{"clients", 1, 1, 4096, "client/server pairs (connections)"},
		{"client_ns", 0, 0, 10000000, "client user-space compute per transaction"},
		{"server_ns", 0, 0, 10000000, "server user-space compute per transaction"},
		{"tx_ns", 1160, 0, 10000000, "tcp_sendmsg's work per message under lock_sock (the skb, tcp_write_xmit, ip_output, loopback_xmit)"},
		{"rx_ns", 1380, 0, 10000000, "the loopback receive path per segment (NET_RX softirq, ip_rcv, tcp_v4_rcv), on the sender's CPU"},
		{"recv_ns", 420, 0, 10000000, "tcp_recvmsg's work per message under lock_sock (the copy to user, tcp_cleanup_rbuf)"},
		{"syscall_ns", 600, 0, 10000000, "compute per send or receive system call outside lock_sock (entry and exit, __sys_sendto / __sys_recvfrom)"},
	}
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

func mkSys(s task.SysOp, obj int, min int64) Op {
	return mk(task.Op{Kind: task.OpSys, Sys: s, Obj: obj, Min: min})
}
func sysSide(s task.SysOp, obj, count int) Op {
	o := mkSys(s, obj, 0)
	o.Count = count
	return o
}
func sysPlus(o Op) Op { o.ObjPlus = true; return o }
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
func loopN(to, n int) Op { return mk(task.Op{Kind: task.OpLoop, Jump: to, Count: n}) }
func exit() Op           { return mk(task.Op{Kind: task.OpExit}) }
func fixedCompute(ns int) Op {
	return compute(int64(ns), int64(ns))
}
func jitterCompute(ns int) Op { // +-25%: breaks the lockstep of identical tasks
	return compute(int64(ns)*3/4, int64(ns)*5/4)
}

// waitBlock is a path's wait, placed after the program's main loop so
// that the path that does not wait falls through: the wait instruction
// w, the re-lock (a mutex, or lock_sock when sock is set), and the jump
// back to the instruction that found it must wait (from). It sets that
// instruction's Jump to the block.
func waitBlock(prog []Op, from int, w Op, relock Op) []Op {
	prog[from].Jump = len(prog)
	return append(prog, w, relock, loop(from))
}

// hackbench (perf bench sched messaging, rt-tests hackbench): per group,
// fds receivers, each reading its own pipe or socket, and fds senders
// writing loops rounds of one datasize-byte message to every receiver
// of their group. Receivers exit after fds*loops messages, senders after
// their last write. docs/benchmarks.md says which kernel path each
// instruction stands for.
func hackbench(p map[string]int) *Scenario {
	groups, fds, loops := p["groups"], p["fds"], p["loops"]
	pipeMode := p["pipe"] == 1
	size := int64(p["datasize"])
	sc := &Scenario{Name: fmt.Sprintf("hackbench:groups=%d", groups), Merit: &Merit{Kind: MeritFinish}}
	for g := 0; g < groups; g++ {
		for j := 0; j < fds; j++ {
			if pipeMode {
				sc.Mutexes = append(sc.Mutexes, fmt.Sprintf("pipe-%d-%d", g, j)) // pipe->mutex
				sc.Objects = append(sc.Objects, Object{Kind: task.ObjPipe, Name: fmt.Sprintf("pipe-%d-%d", g, j), Mutex: len(sc.Mutexes) - 1, Size: p["pipe_bufs"], Msg: -1})
			} else {
				sc.Mutexes = append(sc.Mutexes, fmt.Sprintf("iolock-%d-%d", g, j)) // the receiving end's u->iolock
				sc.Objects = append(sc.Objects, Object{Kind: task.ObjUnixStream, Name: fmt.Sprintf("sock-%d-%d", g, j), Mutex: len(sc.Mutexes) - 1, Size: p["sndbuf"], Msg: -1})
			}
		}
	}
	sys, cp := p["pipe_syscall_ns"], p["pipe_copy_ns"]
	if !pipeMode {
		sys, cp = p["sock_recv_ns"], p["sock_copy_ns"]
	}
	ts := int64(p["truesize"])
	for g := 0; g < groups; g++ {
		base := g * fds // the group's first mutex and object
		recv := len(sc.Groups)
		var rp []Op
		var read int
		if pipeMode {
			rp = []Op{
				/* 0 */ jitterCompute(sys), // read(2) up to pipe_read
				/* 1 */ lockPlus(base), // mutex_lock(&pipe->mutex)
				/* 2 */ sysPlus(mkSys(task.SysPipeRead, base, size)),
				/* 3 */ fixedCompute(cp), // copy_page_to_iter
				/* 4 */ unlockPlus(base),
				/* 5 */ sysPlus(sysSide(task.SysPipeWake, base, 1)),
				/* 6 */ loopN(0, fds*loops),
				/* 7 */ exit(),
			}
			read = 2
			rp = waitBlock(rp, read, sysPlus(sysSide(task.SysPipeWait, base, 1)), lockPlus(base))
		} else {
			rp = []Op{
				/* 0 */ jitterCompute(sys), // recvmsg(2) up to unix_stream_read_generic
				/* 1 */ lockPlus(base), // mutex_lock(&u->iolock)
				/* 2 */ sysPlus(mkSys(task.SysUnixPeek, base, 0)),
				/* 3 */ fixedCompute(cp), // skb_copy_datagram_msg
				/* 4 */ sysPlus(mkSys(task.SysUnixConsume, base, 0)),
				/* 5 */ unlockPlus(base),
				/* 6 */ loopN(0, fds*loops),
				/* 7 */ exit(),
			}
			read = 2
			rp = waitBlock(rp, read, sysPlus(mkSys(task.SysUnixDataWait, base, 0)), lockPlus(base))
		}
		sc.Groups = append(sc.Groups, Group{Name: fmt.Sprintf("recv-%d", g), Count: fds, Policy: task.Normal, Program: rp})
		var prog []Op
		var waits []func([]Op) []Op
		for j := 0; j < fds; j++ {
			obj := base + j
			if pipeMode {
				prog = append(prog,
					jitterCompute(sys), // write(2) up to pipe_write
					lockFixed(obj),     // mutex_lock(&pipe->mutex)
					mkSys(task.SysPipeWrite, obj, size),
					fixedCompute(cp), // copy_page_from_iter
					unlockFixed(obj),
					sysSide(task.SysPipeWake, obj, 0),
				)
				from := len(prog) - 4
				waits = append(waits, func(pr []Op) []Op {
					return waitBlock(pr, from, sysSide(task.SysPipeWait, obj, 0), lockFixed(obj))
				})
			} else {
				prog = append(prog,
					jitterCompute(p["sock_send_ns"]), // write(2): unix_stream_sendmsg up to sock_alloc_send_pskb, the skb's copy
					mkSys(task.SysSockAllocSend, obj, ts),
					mkSys(task.SysUnixQueue, obj, ts),
				)
				from := len(prog) - 2
				waits = append(waits, func(pr []Op) []Op {
					pr[from].Jump = len(pr)
					return append(pr, mkSys(task.SysSockWaitWmem, obj, 0), loop(from))
				})
			}
		}
		prog = append(prog, loopN(0, loops), exit())
		for _, w := range waits {
			prog = w(prog)
		}
		sc.Groups = append(sc.Groups, Group{Name: fmt.Sprintf("send-%d", g), Count: fds, Policy: task.Normal, Program: prog})
		sc.Merit.Groups = append(sc.Merit.Groups, recv)
	}
	return sc
}

// reqResp (tbench, netperf): clients pairs over loopback TCP, connection
// i between client i (end 0) and server i (end 1). The client computes,
// sends the request (lock_sock, tcp_sendmsg, the receive path into the
// server's socket, release_sock) and receives the reply (lock_sock,
// tcp_recvmsg, sk_wait_data while the queue is empty, release_sock); the
// server receives, computes and replies. A transaction is the server's
// received request.
func reqResp(name string, p map[string]int) *Scenario {
	n := p["clients"]
	sc := &Scenario{Name: fmt.Sprintf("%s:clients=%d", name, n), Merit: &Merit{Kind: MeritThroughput, Groups: []int{1}}}
	for i := 0; i < n; i++ {
		sc.Objects = append(sc.Objects, Object{Kind: task.ObjTCP, Name: fmt.Sprintf("tcp-%d", i), Mutex: -1, Msg: -1})
	}
	sys := p["syscall_ns"]
	end := func(o Op, e int) Op { o.Count = e; return sysPlus(o) }
	send := func(e int) []Op {
		return []Op{
			jitterCompute(sys),
			end(mkSys(task.SysLockSock, 0, 0), e),
			fixedCompute(p["tx_ns"]),
			end(mkSys(task.SysTCPXmit, 0, int64(p["rx_ns"])), e),
			end(mkSys(task.SysReleaseSock, 0, int64(p["rx_ns"])), e),
		}
	}
	recv := func(e int) []Op {
		return []Op{
			jitterCompute(sys),
			end(mkSys(task.SysLockSock, 0, 0), e),
			end(mkSys(task.SysTCPRecv, 0, 0), e),
			fixedCompute(p["recv_ns"]),
			end(mkSys(task.SysReleaseSock, 0, int64(p["rx_ns"])), e),
		}
	}
	// The client computes, sends, receives the reply; the server
	// receives, computes, replies.
	prog := func(first, second []Op, user int, e int, userFirst bool) []Op {
		var pr []Op
		if user > 0 && userFirst {
			pr = append(pr, jitterCompute(user))
		}
		pr = append(pr, first...)
		if user > 0 && !userFirst {
			pr = append(pr, jitterCompute(user))
		}
		pr = append(pr, second...)
		pr = append(pr, loop(0))
		// the receive's wait: sk_wait_data, lock_sock, tcp_recvmsg again
		for i, o := range pr {
			if o.Kind == task.OpSys && o.Sys == task.SysTCPRecv {
				pr = waitBlock(pr, i, end(mkSys(task.SysSkWaitData, 0, int64(p["rx_ns"])), e), end(mkSys(task.SysLockSock, 0, 0), e))
				break
			}
		}
		return pr
	}
	sc.Groups = []Group{
		{Name: "client", Count: n, Policy: task.Normal, Program: prog(send(0), recv(0), p["client_ns"], 0, true)},
		{Name: "server", Count: n, Policy: task.Normal, Program: prog(recv(1), send(1), p["server_ns"], 1, false)},
	}
	return sc
}

// schbench (v1.x, masoncl/schbench @c3d60f6): mthreads message threads,
// each with workers worker threads. A worker posts itself on its message
// thread's list (xlist_add, fpost of the message thread) and waits on its
// own futex (fwait); woken, it records its wake-up latency, sleeps
// sleep_ns (usleep(100), plus the timer slack), takes the per-CPU user
// lock of the CPU it runs on, does work_ns of matrix math, drops it and
// records the request. A message thread marks itself blocked, wakes every
// worker on its list (xlist_wake_all) and waits on its own futex.
func schbench(p map[string]int) *Scenario {
	mt, w := p["mthreads"], p["workers"]
	sc := &Scenario{Name: fmt.Sprintf("schbench:workers=%d", w), Merit: &Merit{Kind: MeritLatency}}
	sc.Objects = append(sc.Objects, Object{Kind: task.ObjUserLocks, Name: "per_cpu_locks", Mutex: -1, Msg: -1})
	fns := int64(p["futex_ns"])
	for m := 0; m < mt; m++ {
		msgObj := len(sc.Objects)
		sc.Objects = append(sc.Objects, Object{Kind: task.ObjThread, Name: fmt.Sprintf("msg-%d", m), Mutex: -1, Msg: -1})
		wbase := len(sc.Objects)
		for k := 0; k < w; k++ {
			sc.Objects = append(sc.Objects, Object{Kind: task.ObjThread, Name: fmt.Sprintf("worker-%d-%d", m, k), Mutex: -1, Msg: msgObj})
		}
		msg := []Op{
			mkSys(task.SysFutexSet, msgObj, futexBlockedValue), // td->futex = FUTEX_BLOCKED
			mkSys(task.SysXlistWakeAll, msgObj, fns),
			mkSys(task.SysFutexWait, msgObj, fns),
			loop(0),
		}
		sc.Groups = append(sc.Groups, Group{Name: fmt.Sprintf("msg-%d", m), Count: 1, Policy: task.Normal, Program: msg})
		wait := mkSys(task.SysFutexWait, wbase, fns)
		wait.Count = 1 // record the wake-up latency
		worker := []Op{
			sysPlus(mkSys(task.SysFutexSet, wbase, futexBlockedValue)),
			sysPlus(mkSys(task.SysXlistAdd, wbase, 0)),
			mkSys(task.SysFutexPost, msgObj, fns),
			sysPlus(wait),
			mkSys(task.SysReqStart, 0, 0),
			sleep(int64(p["sleep_ns"]+p["slack_ns"]), int64(p["sleep_ns"]+p["slack_ns"])),
		}
		if p["locking"] == 1 {
			worker = append(worker, mkSys(task.SysUSpinLock, 0, 0), fixedCompute(p["work_ns"]), mkSys(task.SysUSpinUnlock, 0, 0))
		} else {
			worker = append(worker, fixedCompute(p["work_ns"]))
		}
		worker = append(worker, mkSys(task.SysReqEnd, 0, 0), loop(0))
		sc.Groups = append(sc.Groups, Group{Name: fmt.Sprintf("worker-%d", m), Count: w, Policy: task.Normal, Program: worker})
		sc.Merit.Groups = append(sc.Merit.Groups, len(sc.Groups)-1)
	}
	return sc
}

// futexBlockedValue is schbench's FUTEX_BLOCKED.
const futexBlockedValue = 1

// inversion: the pattern proxy execution exists for. Each of rt
// SCHED_FIFO threads wakes every period_ns and takes its own kernel
// mutex for rt_hold_ns; holders fair threads per mutex take the same
// mutex for hold_ns between think_ns of work outside it; hogs fair
// CPU-bound threads take no lock and keep the machine busy, so a fair
// holder shares its CPU while it holds the mutex and an RT waiter waits
// for it. With proxy execution the RT waiter's priority runs the holder.
func inversion(p map[string]int) *Scenario {
	nrt, nh := p["rt"], p["holders"]
	sc := &Scenario{Name: fmt.Sprintf("inversion:hogs=%d", p["hogs"]), Merit: &Merit{Kind: MeritInversion}}
	for i := 0; i < nrt; i++ {
		sc.Mutexes = append(sc.Mutexes, fmt.Sprintf("shared-%d", i))
	}
	period := int64(p["period_ns"])
	sc.Groups = append(sc.Groups, Group{Name: "rt", Count: nrt, Policy: task.FIFO, Prio: 50, Program: []Op{
		sleep(period, period),
		mkSys(task.SysReqStart, 0, 0),
		lockPlus(0),
		fixedCompute(p["rt_hold_ns"]),
		unlockPlus(0),
		mkSys(task.SysReqEnd, 0, 0),
		loop(0),
	}})
	for i := 0; i < nrt; i++ {
		sc.Groups = append(sc.Groups, Group{Name: fmt.Sprintf("holder-%d", i), Count: nh, Policy: task.Normal, Program: []Op{
			jitterCompute(p["think_ns"]),
			mkSys(task.SysReqStart, 0, 0),
			lockFixed(i),
			jitterCompute(p["hold_ns"]),
			unlockFixed(i),
			mkSys(task.SysReqEnd, 0, 0),
			loop(0),
		}})
	}
	if h := p["hogs"]; h > 0 {
		sc.Groups = append(sc.Groups, Group{Name: "hog", Count: h, Policy: task.Normal, Program: []Op{
			fixedCompute(1000000),
			loop(0),
		}})
	}
	sc.Merit.Groups = []int{0}
	for i := 0; i < nrt; i++ {
		sc.Merit.Groups = append(sc.Merit.Groups, 1+i)
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
