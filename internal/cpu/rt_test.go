package cpu

import (
	"math"
	"testing"

	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
)

// RT push and blocked donors (rt.c@84014e78): RT donor D, blocked on a
// mutex held by fair owner O, waits on cpu0 behind RT hog X. rt.c never
// puts a task_is_blocked task on the pushable list (enqueue_task_rt,
// put_prev_task_rt), so push_rt_tasks leaves D and its owner where they
// are, whatever O's mask. Proxy off: D is asleep, not queued, and nothing
// moves.
func TestRTPushSkipsBlockedDonor(t *testing.T) {
	for _, tc := range []struct {
		name      string
		proxy     bool
		ownerMask task.Mask
		wantCPU   int // where D and O end up (D: -1 = not queued)
		pushes    bool
	}{
		{"owner may run on cpu1", true, task.MaskOf(0, 1), 0, false},
		{"owner may run on cpu2 only besides cpu0", true, task.MaskOf(0, 2), 0, false},
		{"owner pinned to cpu0", true, task.MaskOf(0), 0, false},
		{"proxy off: classic rule", false, task.MaskOf(0, 1), -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.CPUs, cfg.Epoch, cfg.SimTime, cfg.AuditEvery, cfg.Proxy = 3, math.MaxInt64/4, math.MaxInt64/4, 0, tc.proxy
			cfg.NoOptimisticSpin = true // D must block (a running owner would make it spin)
			m, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			mx := m.AddMutex("m")
			hold := &task.Program{Ops: []task.Op{{Kind: task.OpLock, Mutex: mx.ID()}, {Kind: task.OpCompute, Min: 1e9}}}
			want := &task.Program{Ops: []task.Op{{Kind: task.OpLock, Mutex: mx.ID()}, {Kind: task.OpCompute, Min: 1e9}}}
			hog := &task.Program{Ops: []task.Op{{Kind: task.OpSleep, Min: 500_000}, {Kind: task.OpCompute, Min: 1e9}}}
			o, _ := m.AddTask(TaskSpec{Name: "O", Policy: task.Normal, Mask: tc.ownerMask, Prog: hold, CPU: 0, Seed: 1})
			d, _ := m.AddTask(TaskSpec{Name: "D", Policy: task.FIFO, Prio: 50, Mask: task.MaskOf(0, 1, 2), Prog: want, CPU: 1, Seed: 2})
			_, _ = m.AddTask(TaskSpec{Name: "X", Policy: task.FIFO, Prio: 90, Mask: task.MaskOf(0), Prog: hog, CPU: 0, Seed: 3})
			cp0, cp1 := m.cpus[0], m.cpus[1]
			for i := 0; i < 3; i++ { // X sleeps; O takes m and keeps running
				cp0.iterate(math.MaxInt64 / 2)
			}
			for i := 0; i < 3; i++ { // D blocks; proxy on: it is migrated to cpu0
				cp1.iterate(math.MaxInt64 / 2)
			}
			cp0.advance(600_000) // X's timer: X wakes and preempts O
			for i := 0; i < 2; i++ {
				cp0.iterate(math.MaxInt64 / 2)
			}
			if cp0.rq.Curr().Name != "X" {
				t.Fatalf("cpu0 runs %v, want the hog X", cp0.rq.Curr())
			}
			pushes := stats.Sum(m.Stats, stats.RTPushes)
			if (pushes > 0) != tc.pushes {
				t.Fatalf("rt pushes = %d, want pushes=%v", pushes, tc.pushes)
			}
			if tc.wantCPU < 0 {
				if d.Queued() {
					t.Fatalf("proxy off: D is queued on cpu%d, want it asleep", d.CPU())
				}
				return
			}
			if d.CPU() != tc.wantCPU || o.CPU() != tc.wantCPU || !d.Queued() || !o.Queued() {
				t.Fatalf("D on cpu%d (queued %v), O on cpu%d (queued %v); want both queued on cpu%d",
					d.CPU(), d.Queued(), o.CPU(), o.Queued(), tc.wantCPU)
			}
			if tc.wantCPU != 0 && d.WakeCPU != 1 {
				t.Fatalf("pushed donor D's wake_cpu = %d, want its home 1 kept (it is blocked)", d.WakeCPU)
			}
		})
	}
}
