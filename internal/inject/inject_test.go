package inject

import (
	"math"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/spinlock"
)

// The jitter injector must act at the probability it claims at every kind
// of yield point: an injector that never fires is a silent failure.
func TestJitterFiresAtItsRate(t *testing.T) {
	const prob = 0.05
	j := NewJitter(prob, 0, 42, 2)
	c := spinlock.NewCPU(0)
	c.Hooks = j.Hooks(0)
	var l spinlock.Lock
	l.Init(spinlock.ClassRQ, 0)
	for i := 0; i < 20000; i++ {
		l.Lock(c)
		l.Unlock(c)
		c.Relax()
	}
	seen, fired := j.Counts()
	for _, pt := range []spinlock.Point{spinlock.PointAcquire, spinlock.PointRelease, spinlock.PointRelax} {
		n := float64(seen[pt])
		if n != 20000 {
			t.Fatalf("%v: saw %v yield points, want 20000", pt, n)
		}
		got := float64(fired[pt]) / n
		sigma := math.Sqrt(prob * (1 - prob) / n)
		if math.Abs(got-prob) > 5*sigma {
			t.Errorf("%v: fired at rate %.4f, want %.2f +- %.4f", pt, got, prob, 5*sigma)
		}
	}
	if j.Fired() == 0 {
		t.Fatal("jitter never fired")
	}
}

func TestJitterOffNeverFires(t *testing.T) {
	j := NewJitter(0, time.Microsecond, 1, 1)
	c := spinlock.NewCPU(0)
	c.Hooks = j.Hooks(0)
	var l spinlock.Lock
	l.Init(spinlock.ClassRQ, 0)
	for i := 0; i < 1000; i++ {
		l.Lock(c)
		l.Unlock(c)
	}
	if j.Fired() != 0 {
		t.Fatalf("jitter at probability 0 fired %d times", j.Fired())
	}
}

// Stutter pauses once per Every of (here, fake) wall time.
func TestStutterPausesAtItsInterval(t *testing.T) {
	s := NewStutter(10 * time.Millisecond)
	s.Pause = 0
	now := time.Unix(0, 0)
	s.now = func() time.Time { return now }
	for i := 0; i < 1000; i++ { // 1000 epochs, 1ms of wall time each
		s.Epoch()
		now = now.Add(time.Millisecond)
	}
	if p := s.Pauses(); p < 90 || p > 100 {
		t.Fatalf("stutter paused %d times in 1s at a 10ms interval, want about 100", p)
	}
}
