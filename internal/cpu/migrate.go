// This file mirrors kernel/sched/core.c's migrate_disable() / migrate_enable()
// (__migrate_disable, __migrate_enable, ___migrate_enable) and migrate_disable_switch(),
// and the CPU hotplug instructions of task programs.

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// opMigrateDisable is migrate_disable(): the outermost call counts the
// task in this_rq()->nr_pinned (a dying CPU waits for it to drop to 0);
// nested calls only deepen it. The task keeps its cpus_ptr until it is
// switched out (migrate_disable_switch).
func (cp *CPU) opMigrateDisable(p *task.Task, op *task.Op) {
	p.Exec.PC++
	if p.MigrationDisabled == 0 {
		cp.nrPinned++
	}
	p.MigrationDisabled++
	cp.c.Emit(trace.EvMigrateDisable, int32(p.ID), int32(p.MigrationDisabled), 0, 0)
}

// opMigrateEnable is migrate_enable(): the outermost call restores
// cpus_ptr to the task's mask when it was pinned (___migrate_enable:
// __set_cpus_allowed_ptr with SCA_MIGRATE_ENABLE, which sends the
// stopper if the mask no longer allows this CPU), then clears
// migration_disabled and drops nr_pinned.
func (cp *CPU) opMigrateEnable(p *task.Task, op *task.Op) {
	p.Exec.PC++
	switch {
	case p.MigrationDisabled == 0:
		cp.m.Report(cp.c, check.InvMigrateDisabled, p, fmt.Sprintf("migrate_enable by %v without migrate_disable", p))
		return
	case p.MigrationDisabled > 1:
		p.MigrationDisabled--
		cp.c.Emit(trace.EvMigrateDisable, int32(p.ID), int32(p.MigrationDisabled), 0, 0)
		return
	}
	if p.PinnedCPU >= 0 {
		cp.migrateEnableAffinity(p)
	}
	p.MigrationDisabled = 0
	cp.nrPinned--
	cp.c.Emit(trace.EvMigrateDisable, int32(p.ID), 0, 0, 0)
}

// migrateEnableAffinity is ___migrate_enable() for current p: under
// pi_lock and the rq lock, cpus_ptr goes back to cpus_mask
// (__do_set_cpus_allowed); affine_move_task(SCA_MIGRATE_ENABLE) is done
// if this CPU is in the mask, else p is current, so the stopper moves it
// (migration_cpu_stop runs after migration_disabled is cleared).
func (cp *CPU) migrateEnableAffinity(p *task.Task) {
	c, r, m := cp.c, cp.rq, cp.m
	p.PiLock.Lock(c.CPU)
	r.Lock(c)
	p.SetPinnedCPU(-1)
	// Done if this CPU is in the mask, even while it is going down:
	// balance_push moves p at its next __schedule.
	if !p.CPUsMask.Has(r.CPU) {
		p.MigrationReady = true
		cp.stopWork = append(cp.stopWork, p)
		r.ReschedCurr(c)
		m.sendIPI(c, r.CPU, ipiStopper)
	}
	r.Unlock(c)
	p.PiLock.Unlock(c.CPU)
}

// migrateDisableSwitch is migrate_disable_switch(): a migrate-disabled
// task switched out is pinned to this CPU (cpus_ptr = cpumask_of(cpu)),
// with the rq lock held. The kernel writes cpus_ptr here while holding
// only the rq lock ("violates locking rules", relying on on_cpu).
func migrateDisableSwitch(r *rq.RQ, p *task.Task) {
	if p.MigrationDisabled > 0 && p.PinnedCPU < 0 {
		p.SetPinnedCPU(r.CPU)
	}
}

// dropMigrateDisable ends any migrate_disable region of an exiting task
// (the kernel WARNs on exiting with migration disabled; the model lets a
// killed task's CPU go down again). cpus_ptr goes back to cpus_mask as in
// migrate_enable, under pi_lock and the rq lock: other CPUs read it under
// either (pull_rt_task's candidates, under the rq lock). Without them this
// was a data race of the model's own, found by a core-scheduling race
// stress once the flight recorder stopped ordering every CPU's events.
func (cp *CPU) dropMigrateDisable(p *task.Task) {
	if p.MigrationDisabled > 0 {
		if p.PinnedCPU >= 0 {
			p.PiLock.Lock(cp.c.CPU)
			cp.rq.Lock(cp.c)
			p.SetPinnedCPU(-1)
			cp.rq.Unlock(cp.c)
			p.PiLock.Unlock(cp.c.CPU)
		}
		p.MigrationDisabled = 0
		cp.nrPinned--
	}
}

// opCPUHotplug is a write to /sys/devices/system/cpu/cpuN/online: the
// request is posted to CPU N, which takes itself down (or up); the writer
// does not wait for it (the kernel's cpu_device_down waits).
func (cp *CPU) opCPUHotplug(p *task.Task, op *task.Op) {
	p.Exec.PC++
	req := hpDown
	if op.Kind == task.OpCPUOnline {
		req = hpUp
	}
	if op.CPU < len(cp.m.cpus) {
		cp.m.hotplugRequest(cp.c, op.CPU, req)
	}
}
