package spinlock

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// BenchmarkLockUnlockPiRQ is task_rq_lock's pair: pi_lock, then the rq
// lock, and their release, with the validator on.
func BenchmarkLockUnlockPiRQ(b *testing.B) {
	v := NewValidator(nil)
	c := NewCPU(0)
	c.Dep = v
	var l, pi Lock
	l.Init(ClassRQ, 0)
	pi.Init(ClassPiLock, 1)
	for i := 0; i < b.N; i++ {
		pi.Lock(c)
		l.Lock(c)
		l.Unlock(c)
		pi.Unlock(c)
	}
}

// BenchmarkYieldFloor is the Go runtime's floor under the model's shape:
// 256 goroutines (one per simulated CPU) on this machine's Ps, each
// taking and releasing its own rq-class lock and yielding `yields`
// times per round, with no other work. A round stands for one simulated
// context switch: the model yields about 14 times per switch at 256
// CPUs on the default workload (optimistic-spin turns, find_proxy_task
// steps and lock spins; docs/architecture.md), so the 14-yield rate is
// the most the goroutine-per-CPU design could reach on this machine
// before any scheduler work is done.
//
//	go test -run '^$' -bench YieldFloor ./internal/spinlock
func BenchmarkYieldFloor(b *testing.B) {
	for _, yields := range []int{0, 1, 14} {
		b.Run(fmt.Sprintf("yields=%d", yields), func(b *testing.B) {
			const ncpu = 256
			var wg sync.WaitGroup
			per := b.N/ncpu + 1
			b.ResetTimer()
			for i := 0; i < ncpu; i++ {
				wg.Add(1)
				go func(id int) {
					defer wg.Done()
					c := NewCPU(id)
					var l Lock
					l.Init(ClassRQ, id)
					for n := 0; n < per; n++ {
						l.Lock(c)
						l.Unlock(c)
						for y := 0; y < yields; y++ {
							runtime.Gosched()
						}
					}
				}(i)
			}
			wg.Wait()
			b.ReportMetric(float64(per*ncpu)/b.Elapsed().Seconds(), "rounds/s")
		})
	}
}
