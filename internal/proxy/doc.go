// Package proxy is proxy execution (CONFIG_SCHED_PROXY_EXEC): the parts of
// kernel/sched/core.c from John Stultz's series v9..v23 and the out-of-tree
// full series that decide what runs when the picked task is blocked on a
// mutex.
//
//	FindProxyTask           find_proxy_task()
//	ReschedIdle             proxy_resched_idle()
//	Deactivate              proxy_deactivate()
//	MigrateTask             proxy_migrate_task()        (whole chain, v20+)
//	ForceReturn             proxy_force_return()        (dequeue, then wake)
//	NeedsReturn             proxy_needs_return()        (from ttwu_runnable)
//	EnqueueOnOwner          proxy_enqueue_on_owner()    [full]
//	ActivateBlockedWaiters  activate_blocked_waiters()  [full]
//	UnlinkSleepingOwner     the woken waiter leaving its owner's list [full]
//
// Locking (outer to inner): p->pi_lock, rq->lock, mutex->wait_lock,
// p->blocked_lock. FindProxyTask runs with the rq lock held and takes the
// wait_lock and blocked_lock of one chain link at a time; it drops a
// link's blocked_lock before taking the owner's. MigrateTask and
// ForceReturn drop the rq lock and never hold two rq locks; before the drop
// they make the idle task the donor so that no reference from this rq to a
// moving task survives it.
//
// Known bugs of the series can be switched back on (internal/bugs); each
// is a guarded branch here, beside its fix.
package proxy
