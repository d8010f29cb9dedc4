package spinlock

import "testing"

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
