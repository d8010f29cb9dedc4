// This file is the model's fork (kernel/fork.c copy_process, and
// sched_fork / wake_up_new_task of kernel/sched/core.c): the respawn of
// tasks that exited, so that a stress run with fatal signals keeps its
// population.

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// respawnEpoch runs at the barrier, every CPU parked (Config.Respawn).
// Each slot whose task was killed (SIGKILL) and reaped (its last
// switch-out after do_exit dropped the task's own reference) gets a new
// task of the slot's spec, as if the dead task's parent forked a replacement on an
// active CPU of its mask (the one the old task died on if it still is):
// copy_process and sched_fork (newTask) here, leaving the task TASK_NEW
// and visible in its slot, and wake_up_new_task on that CPU once it runs
// again (forkPending). Between the two, kill(2), sched_setaffinity and
// complete() can find it, as they can a TASK_NEW task in the kernel.
//
// The slot's id is reused, as a pid is: instructions aimed at the slot
// reach the new task. The old task struct stays with whoever still holds
// a reference to it (a wake_q entry), and use after its last put stays
// invariant 53.
//
// Not the kernel: copy_process runs on the stopped machine, and the
// parent is not modelled (the fork runs at the top of the CPU's loop,
// whatever it was running). A SCHED_DEADLINE spec is forked fair and
// given sched_setattr after its wake-up, as the kernel's sched_fork
// refuses a DL parent; if that is refused, the task stays fair and its
// program's own sched_setattr asks again.
func (m *Machine) respawnEpoch() {
	for id := 1; id < len(m.tasks); id++ {
		old := m.tasks[id]
		if old.State() != task.Dead || !old.Exec.Reaped || !old.Exec.Killed {
			// A program that ends (its exit instruction) is meant to.
			continue
		}
		s := m.specs[id]
		var dl *task.DLParams
		if s.Policy == task.Deadline {
			// Forked fair; sched_setattr follows the wake-up
			// (forkPending). Admission control takes a lock, which
			// the stopped machine must not.
			dl = &s.DL
			s.Policy, s.Prio = task.Normal, 0
		}
		cpu := old.CPU()
		if !m.cpuActive(cpu) || !s.Mask.Has(cpu) {
			if cpu = m.nextActive(&s.Mask, cpu); cpu < 0 {
				continue // no allowed CPU is up: the parent waits
			}
		}
		gen := m.gens[id] + 1
		c := m.cpus[cpu].c
		s.CPU = cpu
		s.Seed += uint64(gen) * 0x9e3779b97f4a7c15
		name := fmt.Sprintf("%s.%d", s.Name, gen)
		p, err := m.newTask(id, name, s, c)
		if err != nil {
			continue // newTask fails only for a SCHED_DEADLINE spec
		}
		p.SetState(task.NewTask)
		if p.CoreCookie != 0 && m.cfg.CoreSched != CoreOff {
			// sched_core_fork: the child takes its cookie's reference,
			// unless the toggler has taken the cookies away (then it
			// gives this one back with the others).
			if m.coreUntagged {
				m.coreDropped[id] = p.CoreCookie
				p.CoreCookie = 0
			} else {
				m.schedCoreGet(c)
			}
		}
		m.gens[id] = gen
		m.retired = append(m.retired, old)
		m.retiredRuntime += old.SE.SumExecRuntime
		m.tasks[id] = p
		cp := m.cpus[cpu]
		cp.forks = append(cp.forks, fork{p, dl})
		cp.ipi.Or(ipiFork)
	}
}

// forkPending is wake_up_new_task of the tasks respawnEpoch created for
// this CPU, with fork balancing (select_task_rq, WF_FORK).
func (cp *CPU) forkPending() {
	c := cp.c
	for i, f := range cp.forks {
		p := f.p
		dest := cp.m.wakeUpNewTask(c, p, true)
		c.Inc(stats.Forks)
		c.Emit(trace.EvFork, int32(p.ID), int32(dest), int32(cp.m.gens[p.ID]), 0)
		if f.dl != nil {
			cp.m.setScheduler(c, p, task.Deadline, 0, *f.dl)
		}
		cp.forks[i] = fork{}
	}
	cp.forks = cp.forks[:0]
}

// fork is a task respawnEpoch created for a CPU to wake, and the
// SCHED_DEADLINE parameters to give it after (nil: none).
type fork struct {
	p  *task.Task
	dl *task.DLParams
}

// Retired returns the tasks respawns replaced (after the run: their
// figures count in the run's totals).
func (m *Machine) Retired() []*task.Task { return m.retired }

// RetiredRuntime is the execution time charged to the retired tasks
// (audit.View; invariant 20 counts it). Read at the barrier.
func (m *Machine) RetiredRuntime() int64 { return m.retiredRuntime }
