// Package hostbench measures this machine for the cost model of
// `proxysim ab --calibrate`: a cache line moved between two CPUs, and a
// blocking pipe round trip between two threads on one CPU or on two. The
// threads are pinned (sched_setaffinity) so that each figure is what it
// says. The figures belong to the host they run on: a virtual machine's
// cross-CPU wake-ups cost what its hypervisor makes them cost.
package hostbench

import (
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// pin locks the calling goroutine to its thread and that thread to
// cpu, at nice -20 when allowed (the highest fair weight: on a shared
// machine the other fair tasks then rarely take the CPU in the middle of
// a measurement; the thread is never real-time).
func pin(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Zero()
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("sched_setaffinity(cpu %d): %v", cpu, err)
	}
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -20) // best effort
	return nil
}

// LineTransfer is the time one cache line takes to move from one CPU to
// the other: threads pinned to cpuA and cpuB hand a token back and forth
// through one word (each waits for its turn, then stores the other's), so
// a round trip moves the line twice. Returns ns per move.
func LineTransfer(cpuA, cpuB, rounds int) (float64, error) {
	var word atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 2)
	var start time.Time
	ready := make(chan struct{})
	side := func(i, cpu int, mine, next int64) {
		defer wg.Done()
		defer runtime.UnlockOSThread()
		if errs[i] = pin(cpu); errs[i] != nil {
			word.Store(-1)
			return
		}
		if i == 0 {
			<-ready
		}
		for n := 0; n < rounds; n++ {
			for {
				v := word.Load()
				if v == mine {
					break
				}
				if v < 0 {
					return
				}
			}
			word.Store(next)
		}
	}
	wg.Add(2)
	go side(0, cpuA, 0, 1)
	go side(1, cpuB, 1, 0)
	time.Sleep(10 * time.Millisecond) // let both threads pin
	start = time.Now()
	close(ready)
	wg.Wait()
	el := time.Since(start)
	for _, e := range errs {
		if e != nil {
			return 0, e
		}
	}
	return float64(el.Nanoseconds()) / float64(2*rounds), nil
}

// PipeRoundTrip is a blocking pipe ping-pong of one byte between threads
// pinned to cpuA and cpuB (equal: both on one CPU), as perf bench sched
// pipe does: each round trip is two writes, two reads, two wake-ups and
// two sleeps. Returns ns per round trip.
func PipeRoundTrip(cpuA, cpuB, rounds int) (float64, error) {
	var ab, ba [2]int
	if err := unix.Pipe(ab[:]); err != nil {
		return 0, err
	}
	defer unix.Close(ab[0])
	defer unix.Close(ab[1])
	if err := unix.Pipe(ba[:]); err != nil {
		return 0, err
	}
	defer unix.Close(ba[0])
	defer unix.Close(ba[1])
	var wg sync.WaitGroup
	errs := make([]error, 2)
	ready := make(chan struct{})
	var el time.Duration
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer runtime.UnlockOSThread()
		if errs[0] = pin(cpuA); errs[0] != nil {
			unix.Close(ab[1])
			return
		}
		<-ready
		b := []byte{1}
		start := time.Now()
		for n := 0; n < rounds; n++ {
			if _, err := unix.Write(ab[1], b); err != nil {
				errs[0] = err
				return
			}
			if _, err := unix.Read(ba[0], b); err != nil {
				errs[0] = err
				return
			}
		}
		el = time.Since(start)
	}()
	go func() {
		defer wg.Done()
		defer runtime.UnlockOSThread()
		if errs[1] = pin(cpuB); errs[1] != nil {
			unix.Close(ba[1])
			return
		}
		b := []byte{0}
		for n := 0; n < rounds; n++ {
			if k, err := unix.Read(ab[0], b); err != nil || k == 0 {
				errs[1] = err
				return
			}
			if _, err := unix.Write(ba[1], b); err != nil {
				errs[1] = err
				return
			}
		}
	}()
	time.Sleep(10 * time.Millisecond)
	close(ready)
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return 0, e
		}
	}
	return float64(el.Nanoseconds()) / float64(rounds), nil
}

// Median runs f reps times and returns the median and every value.
func Median(reps int, f func() (float64, error)) (float64, []float64, error) {
	var xs []float64
	for i := 0; i < reps; i++ {
		v, err := f()
		if err != nil {
			return 0, nil, err
		}
		xs = append(xs, v)
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], xs, nil
	}
	return (s[n/2-1] + s[n/2]) / 2, xs, nil
}
