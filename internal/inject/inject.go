package inject

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
)

// Jitter is the yield-point injector of a whole machine.
type Jitter struct {
	Prob     float64       // probability of acting at each yield point
	MaxDelay time.Duration // longest busy delay (real time)
	cpus     []*JitterCPU
}

// NewJitter makes a jitter injector for ncpu CPUs.
func NewJitter(prob float64, maxDelay time.Duration, seed uint64, ncpu int) *Jitter {
	j := &Jitter{Prob: prob, MaxDelay: maxDelay}
	for i := 0; i < ncpu; i++ {
		j.cpus = append(j.cpus, &JitterCPU{j: j, rng: rand.New(rand.NewPCG(seed^0x7177e5, uint64(i)))})
	}
	return j
}

// Hooks returns CPU i's hooks (for cpu.Config.Hooks).
func (j *Jitter) Hooks(i int) spinlock.Hooks { return j.cpus[i] }

// Counts returns yield points seen and acted on, by point, over all CPUs.
func (j *Jitter) Counts() (seen, fired [spinlock.NumPoints]uint64) {
	for _, c := range j.cpus {
		for p := range seen {
			seen[p] += c.seen[p].Load()
			fired[p] += c.fired[p].Load()
		}
	}
	return
}

// Fired returns the number of injected yields and delays.
func (j *Jitter) Fired() uint64 {
	_, f := j.Counts()
	var n uint64
	for _, v := range f {
		n += v
	}
	return n
}

// JitterCPU is one CPU's injector. Owned by that CPU's goroutine; the
// counters are atomics for readers, bumped by their one writer
// (stats.Bump).
type JitterCPU struct {
	j     *Jitter
	rng   *rand.Rand
	seen  [spinlock.NumPoints]atomic.Uint64
	fired [spinlock.NumPoints]atomic.Uint64
}

// Yield implements spinlock.Hooks.
func (h *JitterCPU) Yield(c *spinlock.CPU, pt spinlock.Point) {
	stats.Bump(&h.seen[pt], 1)
	if h.rng.Float64() >= h.j.Prob {
		return
	}
	stats.Bump(&h.fired[pt], 1)
	if h.j.MaxDelay > 0 && h.rng.IntN(4) == 0 {
		d := time.Duration(h.rng.Int64N(int64(h.j.MaxDelay) + 1))
		for t0 := time.Now(); time.Since(t0) < d; {
		}
		return
	}
	runtime.Gosched()
}

// Spin implements spinlock.Hooks: contended locks wait the default way.
func (h *JitterCPU) Spin(c *spinlock.CPU, l *spinlock.Lock) bool { return false }

// Stutter pauses the whole machine for Pause every Every of real time.
// Its Epoch method runs at epoch barriers, where every CPU is parked.
type Stutter struct {
	Every, Pause time.Duration
	next         time.Time
	pauses       atomic.Uint64
	now          func() time.Time
}

// NewStutter makes a stutter injector; pause defaults to a tenth of every
// (at most 100ms).
func NewStutter(every time.Duration) *Stutter {
	p := every / 10
	if p > 100*time.Millisecond {
		p = 100 * time.Millisecond
	}
	return &Stutter{Every: every, Pause: p, now: time.Now}
}

// Epoch is called with every CPU parked at a barrier.
func (s *Stutter) Epoch() {
	now := s.now()
	if s.next.IsZero() {
		s.next = now.Add(s.Every)
		return
	}
	if now.Before(s.next) {
		return
	}
	time.Sleep(s.Pause)
	s.pauses.Add(1)
	s.next = s.now().Add(s.Every)
}

// Pauses returns how many times the machine was stopped.
func (s *Stutter) Pauses() uint64 { return s.pauses.Load() }
