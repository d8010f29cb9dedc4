package explain

// kfuncsExtra names the kernel functions whose model function's doc
// comment does not open with "Name is kernel_function()" (the comment
// describes a phase of one, or the Go name is the model's own).
var kfuncsExtra = map[string]string{
	"mutex.LockSlowStart":      "__mutex_lock_common",
	"mutex.LockSlowResume":     "__mutex_lock_common",
	"mutex.loopTop":            "__mutex_lock_common",
	"mutex.SpinEnd":            "__mutex_lock_common",
	"mutex.gotItLocked":        "__mutex_lock_common",
	"mutex.errOut":             "__mutex_lock_common",
	"mutex.TryLockFast":        "mutex_lock",
	"mutex.Unlock":             "__mutex_unlock_slowpath",
	"rq.Enqueue":               "enqueue_task",
	"rq.Dequeue":               "dequeue_task",
	"rq.dequeueTask":           "dequeue_task",
	"cpu.maybeActivateWaiters": "activate_blocked_waiters",
	"cpu.setCookie":            "sched_core_update_cookie",
}

// KernelName maps a model function ("cpu.tryToWakeUp", trace.GoFuncName)
// to the kernel function it is, and reports whether it is one.
func KernelName(goName string) (string, bool) {
	if k, ok := kfuncsExtra[goName]; ok {
		return k, true
	}
	k, ok := kfuncsFromDocs[goName]
	return k, ok
}
