// This file mirrors the scheduler's half of a sched domain rebuild:
// kernel/sched/topology.c sched_init_domains() and partition_sched_domains()
// calling sched_update_domains(), and the fair class's update_domains_fair()
// of David Vernet's SHARED_RUNQ series (v3, kernel/sched/fair.c). The
// model's topology is fixed (no hotplug, no cpusets), so a rebuild changes no
// domain: what it keeps is the kernel's lock pattern (every CPU's rq lock in
// turn, from process context) and a hook for the per-CPU state of the fair
// class (SHARED_RUNQ's shard reassignment and drain).

package cpu

import (
	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/stats"
)

// schedInitDomains is sched_init_domains() at boot (sched_init_smp, from
// kernel_init: process context, IRQs on), on CPU 0 before the CPUs start.
// No yield points: nothing else runs yet, and the deterministic schedule
// must not depend on it.
func (m *Machine) schedInitDomains() {
	c := m.cpus[0].c
	h := c.CPU.Hooks
	c.CPU.Hooks = nil
	m.earlyBootTick(c)
	m.schedUpdateDomains(c)
	c.CPU.Hooks = h
}

// earlyBootTick stands for the boot CPU's timer interrupts between
// start_kernel's time init and sched_init_smp(): sched_tick() took CPU 0's
// rq lock in hard-IRQ context long before the first domain build, so
// lockdep knew rq->lock as {IN-HARDIRQ-W} when update_domains_fair() took
// it (the order of the splat in the SHARED_RUNQ thread). Only the tick's
// rq-lock round trip is modelled; its work on the booting machine is not.
func (m *Machine) earlyBootTick(c *percpu.Ctx) {
	c.HardirqEnter()
	m.rqs[0].Lock(c)
	m.rqs[0].Unlock(c)
	c.HardirqExit()
}

// maybeRebuildDomains is the stress injector --domain-rebuild-interval: a
// rebuild (partition_sched_domains, as a cpuset write or hotplug would
// cause) once per period of virtual time, machine-wide, by the first CPU
// whose tick passes it. Process context.
func (m *Machine) maybeRebuildDomains(c *percpu.Ctx) {
	next := m.nextRebuild.Load()
	if c.Now < next || !m.nextRebuild.CompareAndSwap(next, c.Now+m.cfg.DomainRebuildEvery) {
		return
	}
	m.schedUpdateDomains(c)
}

// RebuildDomains runs one sched domain rebuild from CPU c (process
// context, no lock held): what other features hook (UpdateDomainsFair,
// AfterUpdateDomains) runs with it. Returns false if another rebuild is
// in progress (sched_domains_mutex held).
func (m *Machine) RebuildDomains(c *percpu.Ctx) bool { return m.rebuildDomainsWith(c, nil) }

// schedUpdateDomains is sched_update_domains(): under sched_domains_mutex,
// each class's update_domains hook; the model's only one is the fair
// class's.
func (m *Machine) schedUpdateDomains(c *percpu.Ctx) bool { return m.rebuildDomainsWith(c, nil) }

// rebuildDomainsWith is schedUpdateDomains with prepare (if not nil) run
// first under sched_domains_mutex: the new domains a partition builds
// before the classes' hooks see them (SHARED_RUNQ's new shards).
func (m *Machine) rebuildDomainsWith(c *percpu.Ctx, prepare func()) bool {
	if !m.domainsMu.TryLock() {
		return false
	}
	defer m.domainsMu.Unlock()
	if prepare != nil {
		prepare()
	}
	c.Inc(stats.DomainRebuilds)
	m.updateDomainsFair(c)
	return true
}

// updateDomainsFair is update_domains_fair(): every CPU's rq lock in turn,
// with IRQs off (rq_lock_irq), to update the fair class's per-CPU domain
// state; then the drain. SHARED_RUNQ v3 and v4 took it with rq_lock(),
// IRQs on, while the tick takes the same class in hard-IRQ context:
// --bug update-domains-irqs-on.
func (m *Machine) updateDomainsFair(c *percpu.Ctx) {
	irqsOn := c.Bug(bugs.UpdateDomainsIRQsOn)
	for _, r := range m.rqs {
		if irqsOn {
			r.Lock(c)
		} else {
			r.LockIrq(c)
		}
		if m.UpdateDomainsFair != nil {
			m.UpdateDomainsFair(c, r)
		}
		if irqsOn {
			r.Unlock(c)
		} else {
			r.UnlockIrq(c)
		}
	}
	if m.AfterUpdateDomains != nil {
		m.AfterUpdateDomains(c)
	}
}
