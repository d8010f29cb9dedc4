package task

import "testing"

// The kernel's state bits the model's states stand for
// (include/linux/sched.h): ttwu_state_match is __task_state_match's
// "__state & state", with TASK_KILLABLE = TASK_WAKEKILL |
// TASK_UNINTERRUPTIBLE and TASK_NORMAL = TASK_INTERRUPTIBLE |
// TASK_UNINTERRUPTIBLE; TASK_RUNNING (0), TASK_WAKING, TASK_DEAD and
// TASK_NEW share no bit with any wake-up mask the model uses.
func TestTtwuStateMatch(t *testing.T) {
	const (
		taskInterruptible   = 0x1
		taskUninterruptible = 0x2
		taskDead            = 0x80
		taskWakekill        = 0x100
		taskWaking          = 0x200
		taskNew             = 0x800
	)
	bits := map[State]uint{
		Running: 0, Interruptible: taskInterruptible, Uninterruptible: taskUninterruptible,
		Killable: taskWakekill | taskUninterruptible, Waking: taskWaking, Dead: taskDead, NewTask: taskNew,
	}
	masks := map[StateMask]uint{
		WakeNormal:                   taskInterruptible | taskUninterruptible,
		WakeInterruptible:            taskInterruptible,
		WakeUninterruptible:          taskUninterruptible,
		WakeKill:                     taskWakekill,
		WakeInterruptible | WakeKill: taskInterruptible | taskWakekill,
	}
	for st, sb := range bits {
		for mask, mb := range masks {
			if got, want := st.Matches(mask), sb&mb != 0; got != want {
				t.Errorf("ttwu_state_match(%v, mask %#x) = %v, want %v", st, mb, got, want)
			}
		}
	}
}

// task_on_rq_queued and task_on_rq_migrating compare on_rq with
// TASK_ON_RQ_QUEUED (1) and TASK_ON_RQ_MIGRATING (2).
func TestOnRQHelpers(t *testing.T) {
	p := New(1, "p", 2, 0)
	for _, tc := range []struct {
		onRQ              int32
		queued, migrating bool
	}{{OnRQNone, false, false}, {OnRQQueued, true, false}, {OnRQMigrating, false, true}} {
		p.SetOnRQ(tc.onRQ)
		if p.Queued() != tc.queued || p.Migrating() != tc.migrating {
			t.Errorf("on_rq %d: queued %v migrating %v, want %v %v", tc.onRQ, p.Queued(), p.Migrating(), tc.queued, tc.migrating)
		}
	}
	if OnRQQueued != 1 || OnRQMigrating != 2 {
		t.Errorf("TASK_ON_RQ_QUEUED %d, TASK_ON_RQ_MIGRATING %d: the kernel's are 1 and 2", OnRQQueued, OnRQMigrating)
	}
}
