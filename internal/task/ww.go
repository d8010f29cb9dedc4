package task

import "sync/atomic"

// WWCtx is struct ww_acquire_ctx (include/linux/ww_mutex.h): the acquire
// context of a task taking several ww_mutexes of one class. It lives on
// the task's stack in the kernel; here it hangs off ExecState.WW while the
// context is open (ww_acquire_init .. ww_acquire_fini).
type WWCtx struct {
	// Task is ctx->task. Stamp is ctx->stamp, drawn from the class's
	// counter at ww_acquire_init; a smaller stamp is an older context.
	// WaitDie is ctx->is_wait_die (a property of the class). Read-only
	// once the context is published.
	Task    *Task
	Stamp   uint64
	WaitDie bool
	// Acquired is ctx->acquired: ww_mutexes held under this context.
	// Written only by Task (ww_mutex_lock_acquired, __ww_mutex_unlock);
	// read by other tasks under the wait_lock of a mutex Task waits for
	// (__ww_mutex_die, __ww_mutex_wound of a waiter's context), while
	// Task sleeps on that wait list and cannot change it.
	Acquired int
	// wounded is ctx->wounded: set by a wounder under the wait_lock of a
	// mutex this context holds, read and reset by Task under the
	// wait_lock of the mutex it waits for (another lock): the kernel's
	// plain int, ordered only by the wake-up that follows the write
	// (wake_up_process paired with set_current_state). A racy read of
	// the kernel's, hence an atomic here (docs/kernel-map.md).
	wounded atomic.Bool
	// Contended is the mutex index that returned -EDEADLK
	// (ctx->contending_lock), which the back-off takes next with
	// ww_mutex_lock_slow; -1 if none. Task's own.
	Contended int
}

// Wounded reads ctx->wounded.
func (x *WWCtx) Wounded() bool { return x.wounded.Load() }

// SetWounded writes ctx->wounded.
func (x *WWCtx) SetWounded(v bool) { x.wounded.Store(v) }
