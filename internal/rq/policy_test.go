package rq

import (
	"testing"

	"github.com/proxysim/proxysim/internal/task"
)

// Outranks is the class order with the donor as the judge: an RT task
// that beats a proxy's execution context but not its donor outranks
// nobody, a throttled DL task never does, equal ranks never do.
func TestOutranksJudgesTheDonor(t *testing.T) {
	idle := task.New(0, "idle", 1, 0)
	idle.SE.Policy = task.IdlePolicy
	rt := func(id, rtprio int) *task.Task {
		p := task.New(id, "rt", 1, 0)
		p.SetRT(task.FIFO, rtprio)
		return p
	}
	dl := func(id int, deadline int64, inTree bool) *task.Task {
		p := task.New(id, "dl", 1, 0)
		p.SE.Policy = task.Deadline
		p.SE.DL.Deadline, p.SE.DL.OnDLRQ = deadline, inTree
		return p
	}
	fair := task.New(9, "owner", 1, 0)
	donor := rt(1, 80) // proxying for the fair owner
	for _, tc := range []struct {
		name string
		p, d *task.Task
		want bool
	}{
		{"RT 50 against an RT 80 donor with a fair owner as curr", rt(2, 50), donor, false},
		{"RT 90 against an RT 80 donor", rt(3, 90), donor, true},
		{"equal RT prio", rt(4, 80), donor, false},
		{"RT against a fair donor", rt(5, 1), fair, true},
		{"anything RT against idle", rt(6, 1), idle, true},
		{"RT against a DL donor", rt(7, 99), dl(8, 100, true), false},
		{"DL against an RT donor", dl(10, 100, true), donor, true},
		{"throttled DL against an RT donor", dl(11, 100, false), donor, false},
		{"earlier deadline", dl(12, 50, true), dl(13, 100, true), true},
		{"equal deadline", dl(14, 100, true), dl(15, 100, true), false},
		{"fair never outranks", task.New(16, "f", 1, 0), idle, false},
		{"the donor itself", donor, donor, false},
	} {
		if got := Outranks(tc.p, tc.d, idle); got != tc.want {
			t.Errorf("%s: Outranks = %v, want %v", tc.name, got, tc.want)
		}
	}
}
