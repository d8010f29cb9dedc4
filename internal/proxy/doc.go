// Package proxy is proxy execution (CONFIG_SCHED_PROXY_EXEC): the parts
// of kernel/sched/core.c of the full proxy-execution series
// (johnstultz-work/linux-dev core.c@014c4be7) that decide what runs when
// the picked task is blocked on a mutex.
//
//	FindProxyTask           find_proxy_task()
//	ReschedIdle             proxy_resched_idle()
//	Deactivate              proxy_deactivate()
//	MigrateTask             proxy_migrate_task()        (whole chain, v20+)
//	Activate                proxy_activate()            (free lock away from home: wake it)
//	NeedsReturn             proxy_needs_return()        (from ttwu_runnable)
//	resetDonor              proxy_reset_donor()
//	EnqueueOnOwner          proxy_enqueue_on_owner()    [full]
//	ActivateBlockedWaiters  activate_blocked_waiters()  [full]
//
// Locking (outer to inner): p->pi_lock, rq->lock, mutex->wait_lock,
// p->blocked_lock. FindProxyTask runs with the rq lock held and takes the
// wait_lock and blocked_lock of one chain link at a time; it drops a
// link's blocked_lock before taking the owner's. MigrateTask and
// Activate drop the rq lock and never hold two rq locks; before the drop
// they make the idle task the donor so that no reference from this rq to a
// moving task survives it.
//
// Known bugs of the series can be switched back on (internal/bugs); each
// is a guarded branch here, beside its fix.
package proxy
