package workload

import (
	"fmt"
	"sort"
	"strings"

	"github.com/proxysim/proxysim/internal/task"
)

const (
	us = int64(1000)
	ms = 1000 * us
)

// Builder helpers: each returns one instruction.
func compute(min, max int64) Op { return mk(task.Op{Kind: task.OpCompute, Min: min, Max: max}) }
func sleep(min, max int64) Op   { return mk(task.Op{Kind: task.OpSleep, Min: min, Max: max}) }
func lockSlot(s int) Op {
	o := mk(task.Op{Kind: task.OpLock, Mutex: s})
	o.MutexMode = MutexSlot
	return o
}
func unlockSlot(s int) Op {
	o := mk(task.Op{Kind: task.OpUnlock, Mutex: s})
	o.MutexMode = MutexSlot
	return o
}
func lockOwn() Op {
	o := mk(task.Op{Kind: task.OpLock})
	o.MutexMode = MutexByIndex
	return o
}
func unlockOwn() Op {
	o := mk(task.Op{Kind: task.OpUnlock})
	o.MutexMode = MutexByIndex
	return o
}
func choose(p float64, to int) Op { return mk(task.Op{Kind: task.OpChoose, Prob: p, Jump: to}) }
func loop(to int) Op              { return mk(task.Op{Kind: task.OpLoop, Jump: to}) }
func affinityWindow(n int) Op     { return mk(task.Op{Kind: task.OpAffinity, Count: n}) }
func affinityAll() Op             { return mk(task.Op{Kind: task.OpAffinity, Count: -1}) }
func affinitySpread() Op          { return mk(task.Op{Kind: task.OpAffinity, Count: AffinitySpread}) }
func setprio(pol task.Policy, prio int) Op {
	return mk(task.Op{Kind: task.OpSetPrio, Policy: pol, Prio: prio})
}
func setDeadline(runtime, deadline, period int64) Op {
	return mk(task.Op{Kind: task.OpSetPrio, Policy: task.Deadline, DL: task.DLParams{Runtime: runtime, Deadline: deadline, Period: period}})
}

func wake(group, offset int) Op {
	o := mk(task.Op{Kind: task.OpWake})
	o.TargetGroup, o.TargetIndex, o.TargetOffset = group, Self, offset
	return o
}
func mk(o task.Op) Op { return Op{Op: o, TargetGroup: -1} }
func wwInit() Op      { return mk(task.Op{Kind: task.OpWWInit}) }
func wwLockSlow() Op  { return mk(task.Op{Kind: task.OpWWLockSlow}) }
func wwFini() Op      { return mk(task.Op{Kind: task.OpWWFini}) }

// wwLock is ww_mutex_lock of ww slot s; a back-off goes on at retry.
func wwLock(s, retry int) Op {
	o := mk(task.Op{Kind: task.OpWWLock, Mutex: s, Jump: retry})
	o.MutexMode = MutexWWSlot
	return o
}
func wwUnlock(s int) Op {
	o := mk(task.Op{Kind: task.OpWWUnlock, Mutex: s})
	o.MutexMode = MutexWWSlot
	return o
}

// Builtin returns a built-in workload for a machine of cpus CPUs and
// about ntasks tasks (0: the workload's default).
func Builtin(name string, cpus, ntasks int) (*Scenario, error) {
	switch name {
	case "mixed":
		return mixed(cpus, ntasks), nil
	case "locktorture":
		return locktorture(cpus, ntasks), nil
	case "pi":
		return pi(cpus, ntasks), nil
	case "stress":
		return stress(cpus, ntasks), nil
	case "coresched":
		return coresched(cpus), nil
	case "coresched-hog":
		return coreschedHog(cpus), nil
	case "wwtorture":
		return wwtorture(cpus, ntasks), nil
	}
	if IsBenchmark(name) {
		return Benchmark(name)
	}
	return nil, fmt.Errorf("unknown workload %q (built-in: %s; benchmarks: %s; or a scenario file)", name, joinNames(), strings.Join(BenchmarkNames(), ", "))
}

// BuiltinNames lists the built-in workloads.
func BuiltinNames() []string {
	n := []string{"mixed", "locktorture", "pi", "stress"}
	sort.Strings(n)
	return n
}

func joinNames() string {
	s := ""
	for i, n := range BuiltinNames() {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s + ", coresched, wwtorture"
}

func mutexes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("m%d", i)
	}
	return out
}

func atLeast(v, min int) int {
	if v < min {
		return min
	}
	return v
}

// mixed: fair and RT tasks, nested locking in a global order, sleeps while
// holding and not holding locks, cross-task wakeups, affinity changes.
func mixed(cpus, ntasks int) *Scenario {
	if ntasks <= 0 {
		ntasks = 2 * cpus
	}
	ntasks = atLeast(ntasks, 3)
	nfair := atLeast(ntasks*55/100, 1)
	nrt := atLeast(ntasks*15/100, 1)
	ndl := min(atLeast(ntasks*5/100, 1), 2*cpus) // at most 30% of the CPUs: admission control
	npin := atLeast(ntasks-nfair-nrt-ndl, 1)
	nm := atLeast(ntasks/6, 4)
	return &Scenario{
		Name:    "mixed",
		Mutexes: mutexes(nm),
		Groups: []Group{
			{Name: "fair", Count: nfair, Policy: task.Normal, Slots: 2, Program: []Op{
				/* 0 */ compute(50*us, 400*us),
				/* 1 */ lockSlot(0),
				/* 2 */ compute(10*us, 80*us),
				/* 3 */ choose(0.5, 9),
				/* 4 */ lockSlot(1),
				/* 5 */ compute(10*us, 50*us),
				/* 6 */ choose(0.7, 8),
				/* 7 */ sleep(20*us, 200*us), // owner sleeps holding two locks
				/* 8 */ unlockSlot(1),
				/* 9 */ unlockSlot(0),
				/* 10 */ sleep(100*us, 1*ms),
				/* 11 */ choose(0.9, 13),
				/* 12 */ wake(0, 1),
				/* 13 */ choose(0.97, 15),
				/* 14 */ affinityWindow(4),
				/* 15 */ choose(0.97, 17),
				/* 16 */ affinityAll(),
				/* 17 */ loop(0),
			}},
			{Name: "rt", Count: nrt, Policy: task.FIFO, Prio: 20, Slots: 1, Program: []Op{
				compute(20*us, 150*us),
				lockSlot(0),
				compute(5*us, 50*us),
				unlockSlot(0),
				sleep(300*us, 3*ms),
				loop(0),
			}},
			{Name: "pinned", Count: npin, Policy: task.Normal, Slots: 2, Program: []Op{
				/* 0 */ affinityWindow(2),
				/* 1 */ compute(100*us, 300*us),
				/* 2 */ lockSlot(0),
				/* 3 */ lockSlot(1),
				/* 4 */ compute(20*us, 100*us),
				/* 5 */ unlockSlot(1),
				/* 6 */ unlockSlot(0),
				/* 7 */ sleep(200*us, 2*ms),
				/* 8 */ loop(1),
			}},
			// SCHED_DEADLINE: 300 us every 2 ms (15% of a CPU each, 5%
			// of the tasks); an instance computes 50-400 us, so some
			// overrun and are throttled, and the lock makes DL donors.
			{Name: "dl", Count: ndl, Policy: task.Deadline, Slots: 1,
				DL: task.DLParams{Runtime: 300 * us, Deadline: 2 * ms, Period: 2 * ms}, Program: []Op{
					compute(50*us, 300*us),
					lockSlot(0),
					compute(5*us, 100*us),
					unlockSlot(0),
					sleep(1*ms, 3*ms),
					loop(0),
				}},
		},
	}
}

// locktorture: writers contending on a few mutexes, with nested locks,
// occasional long holds and RT boosts (kernel/locking/locktorture.c).
func locktorture(cpus, ntasks int) *Scenario {
	if ntasks <= 0 {
		ntasks = cpus
	}
	ntasks = atLeast(ntasks, 2)
	nm := atLeast(4+ntasks/32, 2)
	return &Scenario{
		Name:    "locktorture",
		Mutexes: mutexes(nm),
		Groups: []Group{
			{Name: "writer", Count: ntasks, Policy: task.Normal, Slots: 2, Program: []Op{
				/* 0 */ compute(2*us, 10*us),
				/* 1 */ choose(0.99, 3),
				/* 2 */ setprio(task.FIFO, 50), // rt_boost
				/* 3 */ choose(0.5, 12),
				/* 4 */ lockSlot(0), // nested_locks
				/* 5 */ lockSlot(1),
				/* 6 */ compute(1*us, 20*us),
				/* 7 */ choose(0.999, 9),
				/* 8 */ compute(10*ms, 50*ms), // long_hold
				/* 9 */ unlockSlot(1),
				/* 10 */ unlockSlot(0),
				/* 11 */ choose(1, 15),
				/* 12 */ lockSlot(0),
				/* 13 */ compute(1*us, 20*us),
				/* 14 */ unlockSlot(0),
				/* 15 */ choose(0.95, 17),
				/* 16 */ setprio(task.Normal, 0), // boost ends
				/* 17 */ choose(0.9, 19),
				/* 18 */ sleep(50*us, 500*us),
				/* 19 */ loop(0),
			}},
		},
	}
}

// pi: the classic inversion. Each low fair task i takes mutex i on CPU i,
// where an RT hog (medium, one pinned to every CPU) runs 50ms at a time
// with 2ms gaps; high RT task i and SCHED_DEADLINE task dl i need mutex i. With proxy execution off
// the high task waits until a hog's gap lets the low task finish its
// critical section (tens of ms); with it on, the low task runs on the
// high task's scheduling context at once.
func pi(cpus, ntasks int) *Scenario {
	k := 1
	if ntasks > 0 {
		k = atLeast(ntasks/(cpus+2), 1)
	}
	if k > cpus {
		k = cpus
	}
	return &Scenario{
		Name:    "pi",
		Mutexes: mutexes(k),
		Groups: []Group{
			{Name: "high", Count: k, Policy: task.FIFO, Prio: 90, Program: []Op{
				sleep(2*ms, 3*ms),
				lockOwn(),
				compute(100*us, 100*us),
				unlockOwn(),
				sleep(4*ms, 6*ms),
				loop(1),
			}},
			{Name: "medium", Count: cpus, Policy: task.FIFO, Prio: 50, Program: []Op{
				affinitySpread(),
				compute(50*ms, 50*ms),
				sleep(2*ms, 2*ms),
				loop(1),
			}},
			{Name: "low", Count: k, Policy: task.Normal, Program: []Op{
				affinitySpread(),
				lockOwn(),
				compute(2*ms, 2*ms),
				unlockOwn(),
				sleep(1*ms, 2*ms),
				loop(1),
			}},
			// The DL row: SCHED_DEADLINE task i (3 ms every 10 ms, which
			// covers the owner's 2 ms section) needs mutex i too: a DL
			// task blocked on the fair owner low i, beside high i.
			{Name: "dl", Count: k, Policy: task.Deadline,
				DL: task.DLParams{Runtime: 3 * ms, Deadline: 10 * ms, Period: 10 * ms}, Program: []Op{
					sleep(2*ms, 3*ms),
					lockOwn(),
					compute(100*us, 100*us),
					unlockOwn(),
					sleep(4*ms, 6*ms),
					loop(1),
				}},
		},
	}
}

// stress: the race-hunting workload of `proxysim stress`: locktorture-style
// writers on nested mutex chains, owners sleeping while holding locks,
// donors with narrow masks (constant proxy and return migration), RT
// boosts and frequent cross-CPU wakeups.
// coresched is the core-scheduling stall workload (the v3
// thread's VMs): CPU-bound tagged groups (two cookies, like two VMs)
// beside untagged interactive tasks on the same cores. Cookies are inert
// without --core-sched, so the same workload is the baseline. Not in
// BuiltinNames (the golden matrix runs without core scheduling).
func coresched(cpus int) *Scenario {
	return &Scenario{
		Name: "coresched",
		Groups: []Group{
			{Name: "vm-a", Count: atLeast(cpus/2, 1), Policy: task.Normal, Cookie: 1, Program: []Op{
				compute(3*ms, 5*ms), sleep(10*us, 20*us), loop(0),
			}},
			{Name: "vm-b", Count: atLeast(cpus/4, 1), Policy: task.Normal, Cookie: 2, Program: []Op{
				compute(3*ms, 5*ms), sleep(10*us, 20*us), loop(0),
			}},
			{Name: "interactive", Count: atLeast(cpus/2, 1), Policy: task.Normal, Program: []Op{
				compute(100*us, 100*us), sleep(500*us, 1*ms), loop(0),
			}},
		},
	}
}

// coreschedHog is one tagged and one untagged CPU hog per SMT core (the
// design note's 2-task/1-core shape, K2 and K4): each computes 300 ms at
// a time. With one task per CPU nothing but the forced-idle tick
// (task_tick_core) and the min_vruntime_fi snapshot let the forced-idle
// side run. Not in BuiltinNames.
func coreschedHog(cpus int) *Scenario {
	n := atLeast(cpus/2, 1)
	return &Scenario{
		Name: "coresched-hog",
		Groups: []Group{
			{Name: "hog-tagged", Count: n, Policy: task.Normal, Cookie: 1, Program: []Op{
				compute(300*ms, 300*ms), sleep(10*us, 20*us), loop(0),
			}},
			{Name: "hog", Count: n, Policy: task.Normal, Program: []Op{
				compute(300*ms, 300*ms), sleep(10*us, 20*us), loop(0),
			}},
		},
	}
}

func stress(cpus, ntasks int) *Scenario {
	if ntasks <= 0 {
		ntasks = 2 * cpus
	}
	ntasks = atLeast(ntasks, 4)
	nw := atLeast(ntasks/2, 1)
	nn := atLeast(ntasks/4, 1)
	ns := atLeast(ntasks-nw-nn, 1)
	// The deadline group comes on top of the others, which keep their
	// sizes: taking it out of the sleepers thinned the sleeping-owner
	// paths enough that late-activation-on-cpu went uncaught in 60 s.
	nd := min(atLeast(ntasks/8, 1), 4*cpus) // at most 40% of the CPUs: admission control
	nm := atLeast(ntasks/8, 4)
	nww := atLeast(ntasks/16, 2)  // tasks per ww group
	nwwm := atLeast(ntasks/32, 4) // ww_mutexes per class
	return &Scenario{
		Name:    "stress",
		Mutexes: mutexes(nm),
		WW:      []WWSet{{Name: "wd", WaitDie: true, Count: nwwm}, {Name: "ww", Count: nwwm}},
		Groups: []Group{
			{Name: "writer", Count: nw, Policy: task.Normal, Slots: 3, Program: []Op{
				/* 0 */ compute(5*us, 50*us),
				/* 1 */ lockSlot(0),
				/* 2 */ choose(0.3, 8),
				/* 3 */ lockSlot(1),
				/* 4 */ choose(0.5, 7),
				/* 5 */ lockSlot(2),
				/* 6 */ unlockSlot(2),
				/* 7 */ unlockSlot(1),
				/* 8 */ compute(2*us, 30*us),
				/* 9 */ choose(0.9, 11),
				/* 10 */ sleep(10*us, 100*us), // sleeping owner
				/* 11 */ unlockSlot(0),
				/* 12 */ choose(0.8, 14),
				/* 13 */ wake(1, 0),
				/* 14 */ choose(0.95, 16),
				/* 15 */ setprio(task.FIFO, 30),
				/* 16 */ choose(0.95, 18),
				/* 17 */ setprio(task.Normal, 0),
				/* 18 */ sleep(20*us, 300*us),
				/* 19 */ loop(0),
			}},
			{Name: "narrow", Count: nn, Policy: task.FIFO, Prio: 40, Slots: 2, Program: []Op{
				/* 0 */ affinityWindow(1), // donors with narrow masks
				/* 1 */ compute(5*us, 40*us),
				/* 2 */ lockSlot(0),
				/* 3 */ compute(2*us, 20*us),
				/* 4 */ unlockSlot(0),
				/* 5 */ lockSlot(1),
				/* 6 */ unlockSlot(1),
				/* 7 */ sleep(30*us, 400*us),
				/* 8 */ choose(0.97, 10),
				/* 9 */ affinityWindow(2),
				/* 10 */ loop(1),
			}},
			{Name: "sleeper", Count: ns, Policy: task.Normal, Slots: 2, Program: []Op{
				/* 0 */ lockSlot(0),
				/* 1 */ sleep(50*us, 500*us), // owner asleep holding: donors park on it
				/* 2 */ unlockSlot(0), // released right after its wakeup (activation races the hand-off)
				/* 3 */ lockSlot(1),
				/* 4 */ compute(5*us, 50*us),
				/* 5 */ unlockSlot(1),
				/* 6 */ sleep(100*us, 1*ms),
				/* 7 */ wake(0, 3),
				/* 8 */ loop(0),
			}},
			{Name: "ww-wd", Count: nww, Policy: task.Normal, WWSet: 0, WWSlots: 3, Program: wwStress()},
			{Name: "ww-wound", Count: nww, Policy: task.Normal, WWSet: 1, WWSlots: 3, Program: wwStress()},
			// SCHED_DEADLINE donors: 100 us every 1 ms (10% of a CPU
			// each, an eighth of the tasks), instances of 20-150 us so
			// that budgets run out while proxying (throttled donors),
			// nested locks, and a few switches to fair and back through
			// admission control.
			{Name: "deadline", Count: nd, Policy: task.Deadline, Slots: 2,
				DL: task.DLParams{Runtime: 100 * us, Deadline: 1 * ms, Period: 1 * ms}, Program: []Op{
					/* 0 */ compute(20*us, 150*us),
					/* 1 */ lockSlot(0),
					/* 2 */ choose(0.5, 5),
					/* 3 */ lockSlot(1),
					/* 4 */ unlockSlot(1),
					/* 5 */ compute(2*us, 30*us),
					/* 6 */ unlockSlot(0),
					/* 7 */ sleep(50*us, 600*us),
					/* 8 */ choose(0.97, 11),
					/* 9 */ setprio(task.Normal, 0),
					/* 10 */ setDeadline(100*us, 1*ms, 1*ms),
					/* 11 */ loop(0),
				}},
		},
	}
}

// wwStress is test-ww_mutex's stress_reorder for the stress workload:
// three ww_mutexes of the group's class in the task's own random order
// under one acquire context, held across a compute and sometimes a
// sleep (a sleeping owner of ww_mutexes); -EDEADLK backs off, takes the
// contended lock with ww_mutex_lock_slow and retries.
func wwStress() []Op {
	return []Op{
		/* 0 */ compute(5*us, 40*us),
		/* 1 */ wwInit(),
		/* 2 */ wwLockSlow(),
		/* 3 */ wwLock(0, 2),
		/* 4 */ wwLock(1, 2),
		/* 5 */ wwLock(2, 2),
		/* 6 */ compute(2*us, 20*us),
		/* 7 */ choose(0.8, 9),
		/* 8 */ sleep(10*us, 100*us),
		/* 9 */ wwUnlock(2),
		/* 10 */ wwUnlock(1),
		/* 11 */ wwUnlock(0),
		/* 12 */ wwFini(),
		/* 13 */ sleep(20*us, 200*us),
		/* 14 */ loop(0),
	}
}

// wwtorture is kernel/locking/test-ww_mutex.c's stress() for both
// classes at once: per class (wound: Wound-Wait, die: Wait-Die; the
// kernel runs them one after the other) 16 ww_mutexes and, like
// STRESS_ALL, three kinds of threads. Not in BuiltinNames (the golden
// matrix does not run it).
//
//   - inorder (stress_inorder_work): all 16 locks in the task's own random
//     order under one context; -EDEADLK: unlock what is held, take the
//     contended lock with ww_mutex_lock_slow, retry (the contended one is
//     then -EALREADY and skipped);
//   - reorder (stress_reorder_work): 4 locks in a random order; after a
//     back-off the contended lock is taken first (lock_slow) and the rest
//     follow. The kernel also moves it to the front of the task's list
//     for later transactions (list_move); a program's order is fixed,
//     so here only the transaction that backed off starts with it;
//   - one (stress_one_work): one random lock with ww_mutex_lock(lock,
//     NULL): a ww_mutex taken without a context, beside the others.
//
// dummy_load is a short compute; each pass ends with a short sleep so
// that the default 2 x CPUs threads leave idle time for wake-ups.
func wwtorture(cpus, ntasks int) *Scenario {
	if ntasks <= 0 {
		ntasks = 2 * cpus
	}
	n := atLeast(ntasks/6, 1)
	const nlocks = 16
	inorder := func() []Op {
		ops := []Op{ /* 0 */ wwInit() /* 1 */, wwLockSlow()}
		for i := 0; i < nlocks; i++ {
			ops = append(ops, wwLock(i, 1))
		}
		ops = append(ops, compute(5*us, 50*us))
		for i := nlocks - 1; i >= 0; i-- {
			ops = append(ops, wwUnlock(i))
		}
		return append(ops, wwFini(), sleep(10*us, 100*us), loop(0))
	}
	reorder := func() []Op {
		return []Op{
			/* 0 */ wwInit(),
			/* 1 */ wwLockSlow(),
			/* 2 */ wwLock(0, 1),
			/* 3 */ wwLock(1, 1),
			/* 4 */ wwLock(2, 1),
			/* 5 */ wwLock(3, 1),
			/* 6 */ compute(5*us, 50*us),
			/* 7 */ wwUnlock(3),
			/* 8 */ wwUnlock(2),
			/* 9 */ wwUnlock(1),
			/* 10 */ wwUnlock(0),
			/* 11 */ wwFini(),
			/* 12 */ sleep(10*us, 100*us),
			/* 13 */ loop(0),
		}
	}
	one := func() []Op {
		return []Op{
			/* 0 */ wwLock(0, 0), // ww_mutex_lock(lock, NULL)
			/* 1 */ compute(5*us, 50*us),
			/* 2 */ wwUnlock(0),
			/* 3 */ sleep(10*us, 100*us),
			/* 4 */ loop(0),
		}
	}
	s := &Scenario{
		Name: "wwtorture",
		WW:   []WWSet{{Name: "wound", Count: nlocks}, {Name: "die", WaitDie: true, Count: nlocks}},
	}
	for k, cl := range []string{"wound", "die"} {
		s.Groups = append(s.Groups,
			Group{Name: cl + "-inorder", Count: n, Policy: task.Normal, WWSet: k, WWSlots: nlocks, Program: inorder()},
			Group{Name: cl + "-reorder", Count: n, Policy: task.Normal, WWSet: k, WWSlots: 4, Program: reorder()},
			Group{Name: cl + "-one", Count: n, Policy: task.Normal, WWSet: k, WWSlots: 1, Program: one()},
		)
	}
	return s
}
