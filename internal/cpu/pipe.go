// This file mirrors fs/pipe.c (torvalds/linux @00a7d39898c8): the ring of
// pipe buffers, pipe_write and pipe_read under pipe->mutex, their
// exclusive waits on wr_wait and rd_wait, and the wake-ups they owe.
//
// A program does a write as: compute (the system call up to pipe_write),
// lock pipe->mutex, pipe_write (SysPipeWrite: merge into the last buffer
// or fill a new one; Jump to the wait path when the ring is full), the
// copy, unlock, the wake-ups (SysPipeWake); the wait path is SysPipeWait
// (mutex_unlock, the reader's wake-up if the pipe was empty,
// wait_event_interruptible_exclusive(wr_wait, pipe_writable)), lock, and
// back to pipe_write with the loop's state. A read is the same with
// SysPipeRead and rd_wait. The mutex is a machine mutex, so the model's
// mutex_lock (optimistic spinning, the slow path, proxy execution) is
// what pipe->mutex does.

package cpu

import (
	"fmt"
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// pipePageSize is PAGE_SIZE: a pipe buffer holds one page.
const pipePageSize = 4096

// pipeMaxRing bounds a pipe's ring: pipe_max_size (1 MiB) in pages.
const pipeMaxRing = 256

// pipe is struct pipe_inode_info with one reader and its writers open.
type pipe struct {
	id    int
	name  string
	mutex int // pipe->mutex: a machine mutex
	// maxUsage is pipe->max_usage and ring_size (PIPE_DEF_BUFFERS, 16).
	maxUsage uint32
	// head and tail are pipe->head and pipe->tail: written under
	// pipe->mutex, read without it by pipe_readable and pipe_writable
	// (READ_ONCE(pipe->head_tail)): atomics.
	head, tail atomic.Uint32
	// off and len are each slot's pipe_buffer offset and len; every
	// buffer of an anonymous pipe may take merged writes
	// (PIPE_BUF_FLAG_CAN_MERGE). Guarded by pipe->mutex.
	off, len []int32
	// rdWait and wrWait are pipe->rd_wait and pipe->wr_wait.
	rdWait, wrWait *waitQueue
}

func newPipe(id int, s ObjSpec) *pipe {
	return &pipe{id: id, name: s.Name, mutex: s.Mutex, maxUsage: uint32(s.Size),
		off: make([]int32, s.Size), len: make([]int32, s.Size),
		rdWait: newWaitQueue(2 * id), wrWait: newWaitQueue(2*id + 1)}
}

func pipeEmpty(head, tail uint32) bool       { return head == tail }
func pipeFull(head, tail, limit uint32) bool { return head-tail >= limit }

// readable is pipe_readable(), without the lock. With a reader and its
// writers open for the whole run, !pipe->writers never holds.
func (pp *pipe) readable() bool { return !pipeEmpty(pp.head.Load(), pp.tail.Load()) }

// writable is pipe_writable(), without the lock (!pipe->readers never
// holds).
func (pp *pipe) writable() bool { return !pipeFull(pp.head.Load(), pp.tail.Load(), pp.maxUsage) }

// mustHold reports (and returns false) a pipe path run without
// pipe->mutex held.
func (cp *CPU) pipeMustHold(p *task.Task, op *task.Op, pp *pipe) bool {
	if holds(p, pp.mutex) {
		return true
	}
	cp.m.Report(cp.c, check.InvMutexMisuse, p, fmt.Sprintf("%v: %s on %s without pipe->mutex (%v) held", p, op.Sys, pp.name, cp.m.mutexes[pp.mutex]))
	return false
}

// pipeWrite is pipe_write()'s work under pipe->mutex for a write of
// op.Min bytes (less than a page, as hackbench's): was_empty; the merge
// into the last buffer if the write is the first attempt, the pipe was
// not empty and the bytes fit; else a new buffer if the ring is not full;
// else the wait path (op.Jump). On success the wake-ups owed after the
// unlock are set: the readers' if the pipe was empty, the next writer's
// if the path waited and the ring is not full now ("out:").
func (cp *CPU) pipeWrite(p *task.Task, op *task.Op, pp *pipe) {
	ex := &p.Exec
	sy := &ex.Sys
	if !cp.pipeMustHold(p, op, pp) {
		ex.PC++
		return
	}
	chars := int32(op.Min)
	head, tail := pp.head.Load(), pp.tail.Load()
	mask := pp.maxUsage - 1
	done := false
	if sy.Looping {
		// Back from the wait, re-locked: was_empty = pipe_is_empty(),
		// wake_next_writer = true; the loop does not merge.
		sy.WakeRd, sy.WakeWr = pipeEmpty(head, tail), true
	} else {
		sy.WakeRd, sy.WakeWr = pipeEmpty(head, tail), false
		if chars > 0 && !sy.WakeRd {
			last := (head - 1) & mask
			if pp.off[last]+pp.len[last]+chars <= pipePageSize {
				pp.len[last] += chars
				done = true
			}
		}
	}
	if !done {
		if pipeFull(head, tail, pp.maxUsage) {
			cp.c.Inc(stats.PipeFull)
			cp.c.Emit(trace.EvSys, int32(p.ID), int32(op.Sys), int32(pp.id), trace.SysWaits)
			ex.PC = op.Jump
			return
		}
		slot := head & mask
		pp.off[slot], pp.len[slot] = 0, chars
		pp.head.Store(head + 1)
	}
	// out: no next writer to wake while the ring is full.
	if pipeFull(pp.head.Load(), tail, pp.maxUsage) {
		sy.WakeWr = false
	}
	sy.Looping = false
	ex.PC++
}

// pipeRead is pipe_read()'s work under pipe->mutex for a read of op.Min
// bytes: from the tail buffer on, a buffer emptied is released (tail++)
// and a writer owed a wake-up if the ring was full before; with nothing
// read the wait path (op.Jump). On success the next reader is owed a
// wake-up if the path waited and the pipe is not empty now.
func (cp *CPU) pipeRead(p *task.Task, op *task.Op, pp *pipe) {
	ex := &p.Exec
	sy := &ex.Sys
	if !cp.pipeMustHold(p, op, pp) {
		ex.PC++
		return
	}
	if !sy.Looping {
		sy.WakeWr, sy.WakeRd = false, false // wake_writer, wake_next_reader
	}
	// (Back from the wait: wake_writer = false and wake_next_reader =
	// true were set by pipeWait before the re-lock, as the kernel does.)
	total := int32(op.Min)
	read := int32(0)
	mask := pp.maxUsage - 1
	head := pp.head.Load()
	tail := pp.tail.Load()
	for total > 0 && !pipeEmpty(head, tail) {
		slot := tail & mask
		n := min(pp.len[slot], total)
		pp.off[slot] += n
		pp.len[slot] -= n
		read += n
		total -= n
		if pp.len[slot] == 0 {
			if pipeFull(head, tail, pp.maxUsage) {
				sy.WakeWr = true
			}
			tail++
			pp.tail.Store(tail)
		}
	}
	if read == 0 {
		cp.c.Inc(stats.PipeEmpty)
		cp.c.Emit(trace.EvSys, int32(p.ID), int32(op.Sys), int32(pp.id), trace.SysWaits)
		ex.PC = op.Jump
		return
	}
	if pipeEmpty(head, tail) {
		sy.WakeRd = false
	}
	sy.Looping = false
	p.Stats.Requests++ // a message read: the benchmark's count
	ex.PC++
}

// pipeWake issues the wake-ups a pipe_write (op.Count 0: the readers'
// if the pipe was empty, then the next writer's) or a pipe_read (1: the
// writers' if a full ring got room, then the next reader's) owes after
// mutex_unlock: wake_up_interruptible_sync_poll, one exclusive waiter.
// The model has no WF_SYNC placement hint: these are plain wake-ups.
func (cp *CPU) pipeWake(p *task.Task, op *task.Op, pp *pipe) {
	ex := &p.Exec
	sy := &ex.Sys
	if op.Count == 0 {
		if sy.WakeRd {
			cp.wakeUp(pp.rdWait, task.WakeInterruptible, 1)
		}
		if sy.WakeWr {
			cp.wakeUp(pp.wrWait, task.WakeInterruptible, 1)
		}
	} else {
		if sy.WakeWr {
			cp.wakeUp(pp.wrWait, task.WakeInterruptible, 1)
		}
		if sy.WakeRd {
			cp.wakeUp(pp.rdWait, task.WakeInterruptible, 1)
		}
	}
	sy.WakeRd, sy.WakeWr = false, false
	ex.PC++
}

// pipeWait is the wait of pipe_write (op.Count 0) or pipe_read (1):
// mutex_unlock(&pipe->mutex); the wake-up owed before sleeping (a
// writer's of the readers if the pipe was empty when it started, a
// reader's of the writers if it emptied a full ring's buffer); then
// wait_event_interruptible_exclusive on wr_wait until pipe_writable, or
// on rd_wait until pipe_readable. The program re-locks next and goes
// back into the loop (SysState.Looping).
func (cp *CPU) pipeWait(p *task.Task, op *task.Op, pp *pipe) {
	ex := &p.Exec
	sy := &ex.Sys
	reader := op.Count == 1
	if ex.Phase == 0 && !sy.Restart {
		if !cp.unlock(p, pp.mutex) {
			cp.m.Report(cp.c, check.InvMutexMisuse, p, fmt.Sprintf("%v: %s on %s without pipe->mutex held", p, op.Sys, pp.name))
		}
		if reader && sy.WakeWr {
			cp.wakeUp(pp.wrWait, task.WakeInterruptible, 1)
		}
		if !reader && sy.WakeRd {
			cp.wakeUp(pp.rdWait, task.WakeInterruptible, 1)
		}
	}
	var ok bool
	if reader {
		ok = cp.waitEvent(p, op, pp.rdWait, true, pp.readable)
	} else {
		ok = cp.waitEvent(p, op, pp.wrWait, true, pp.writable)
	}
	if !ok {
		return
	}
	sy.Looping = true
	if reader {
		sy.WakeWr, sy.WakeRd = false, true // wake_writer = false; wake_next_reader = true
	}
	ex.PC++
}
