package task

import (
	"fmt"
	"sync/atomic"
)

// SysOp is the operation of an OpSys instruction: one step of a kernel
// path on a kernel object (a pipe, a socket, a futex) or of a user-space
// primitive built on one, as the benchmark workloads use them
// (docs/benchmarks.md says which kernel function each stands for). The
// sleeping locks of those paths that are struct mutex (pipe->mutex,
// u->iolock) are not SysOps: programs take them with OpLock and OpUnlock,
// so that proxy execution engages exactly where it would.
type SysOp uint8

// The operations. "Jump" is where the program goes on when the
// operation cannot complete without waiting (the path's wait loop).
const (
	_ SysOp = iota
	// pipe_write's work under pipe->mutex (fs/pipe.c): merge Min bytes
	// into the last buffer or fill a new one; Jump when the ring is full.
	SysPipeWrite
	// pipe_read's work under pipe->mutex: take Min bytes from the tail
	// buffer; Jump when the pipe is empty.
	SysPipeRead
	// The wake-ups pipe_write or pipe_read decided, after mutex_unlock.
	SysPipeWake
	// The wait of pipe_write (Count 0: wr_wait until pipe_writable) or
	// pipe_read (Count 1: rd_wait until pipe_readable): mutex_unlock, the
	// wake-up owed before sleeping, wait_event_interruptible_exclusive.
	SysPipeWait
	// sock_alloc_send_pskb on the sending end of a unix stream pair:
	// charge an skb of Min bytes of truesize to sk_wmem_alloc; Jump when
	// sk_wmem_alloc has reached sk_sndbuf.
	SysSockAllocSend
	// sock_wait_for_wmem on the sending end: wait on its sk_sleep until
	// sk_wmem_alloc is below sk_sndbuf.
	SysSockWaitWmem
	// unix_stream_sendmsg's queueing: the skb onto the peer's
	// sk_receive_queue under unix_state_lock, then sk_data_ready.
	SysUnixQueue
	// unix_stream_read_generic's look at sk_receive_queue (under
	// u->iolock); Jump when it is empty.
	SysUnixPeek
	// skb_unlink and consume_skb of the skb read: sock_wfree on the
	// sender, unix_write_space.
	SysUnixConsume
	// mutex_unlock(&u->iolock) and unix_stream_data_wait.
	SysUnixDataWait
	// lock_sock on end Count of a TCP connection (0 client, 1 server).
	SysLockSock
	// release_sock on end Count: the backlog, then the owner's wait queue.
	SysReleaseSock
	// tcp_sendmsg's transmission over loopback from end Count to the
	// other end: the receive processing (Min ns, softirq on this CPU)
	// queues the data on the peer or, if its user owns it, its backlog.
	SysTCPXmit
	// tcp_recvmsg's look at end Count's receive queue (lock_sock held):
	// take a segment; Jump when it is empty.
	SysTCPRecv
	// sk_wait_data on end Count: release_sock, wait_woken on sk_sleep.
	SysSkWaitData
	// A store of Min to the futex word of thread object Obj (user space).
	SysFutexSet
	// schbench's fpost on thread Obj: cmpxchg BLOCKED to RUNNING and, if
	// it succeeded, FUTEX_WAKE of one waiter (Min ns of syscall).
	SysFutexPost
	// schbench's fwait on thread Obj: cmpxchg RUNNING to BLOCKED, else
	// FUTEX_WAIT (Min ns of syscall) and again. Count 1: record the
	// wake-up latency from the thread's wake_time.
	SysFutexWait
	// schbench's xlist_add: thread Obj onto its message thread's list,
	// wake_time stamped.
	SysXlistAdd
	// schbench's xlist_wake_all on message thread Obj: splice its list
	// and fpost each thread on it, one per step (Min ns each).
	SysXlistWakeAll
	// pthread_mutex_trylock spin on the per-CPU user lock of the CPU the
	// task runs on (lock array Obj), with schbench's migration re-check.
	SysUSpinLock
	// pthread_mutex_unlock of the lock SysUSpinLock took.
	SysUSpinUnlock
	// Stamp the start of a request (user space: gettimeofday).
	SysReqStart
	// End the request begun at the stamp: its latency, one request done.
	SysReqEnd
	NumSysOps
)

var sysNames = [NumSysOps]string{"", "pipe_write", "pipe_read", "pipe_wake", "pipe_wait",
	"sock_alloc_send", "sock_wait_wmem", "unix_queue", "unix_peek", "unix_consume", "unix_data_wait",
	"lock_sock", "release_sock", "tcp_xmit", "tcp_recv", "sk_wait_data",
	"futex_set", "futex_post", "futex_wait", "xlist_add", "xlist_wake_all", "uspin_lock", "uspin_unlock",
	"req_start", "req_end"}

func (s SysOp) String() string {
	if s > 0 && s < NumSysOps {
		return sysNames[s]
	}
	return fmt.Sprintf("sys(%d)", uint8(s))
}

// Jumps reports whether the operation goes on at Op.Jump when it would
// have to wait.
func (s SysOp) Jumps() bool {
	switch s {
	case SysPipeWrite, SysPipeRead, SysSockAllocSend, SysUnixPeek, SysTCPRecv:
		return true
	}
	return false
}

// SysState is the state one system call keeps across the instructions
// that model it (its local variables: pipe_write's was_empty and
// wake_next_writer ...). It belongs to the task, like ExecState.
type SysState struct {
	// Looping: the path came back from its wait and re-locked; the next
	// attempt is the loop's, not the first (pipe_write no longer merges).
	Looping bool
	// WakeRd and WakeWr are the wake-ups of the pipe's rd_wait and
	// wr_wait the path owes after mutex_unlock (pipe_write's was_empty and
	// wake_next_writer, pipe_read's wake_next_reader and wake_writer).
	WakeRd, WakeWr bool
	// Restart: a signal interrupted the wait (-ERESTARTSYS); once it is
	// handled the instruction goes straight back into its wait loop.
	Restart bool
	// Slot is the per-CPU user lock SysUSpinLock took (-1: none).
	Slot int
	// Stamp is the request's start (SysReqStart).
	Stamp int64
}

// WaitEntry is the task's wait_queue_entry: on at most one wait queue
// at a time (the model's paths wait on one queue each).
type WaitEntry struct {
	// Queued is !list_empty(&entry->entry): written under the wait
	// queue's lock, read without it by finish_wait (list_empty_careful):
	// an atomic.
	Queued atomic.Bool
	// Exclusive (WQ_FLAG_EXCLUSIVE) and Woken (woken_wake_function's
	// entries: WQ_FLAG_WOKEN is set by the waker, the entry stays queued)
	// are written by the task when it queues the entry and by wakers,
	// under the wait queue's lock. Woken is read by wait_woken without it
	// (an smp_store_mb / READ in the kernel): an atomic.
	Exclusive bool
	WokenFunc bool
	Woken     atomic.Bool
}

// ObjKind is the kind of a kernel (or user-space) object OpSys works on.
type ObjKind uint8

const (
	ObjNone       ObjKind = iota
	ObjPipe               // struct pipe_inode_info (fs/pipe.c)
	ObjUnixStream         // a connected AF_UNIX SOCK_STREAM pair: the sending and the receiving end
	ObjTCP                // a loopback TCP connection: two struct sock, end 0 and end 1
	ObjThread             // schbench's struct thread_data: a futex word, wake_time, its message thread's list
	ObjUserLocks          // schbench's per-CPU user locks (pthread mutexes taken by trylock spinning)
	NumObjKinds
)

var objKindNames = [NumObjKinds]string{"none", "pipe", "unix_stream", "tcp", "thread", "user_locks"}

func (k ObjKind) String() string {
	if k < NumObjKinds {
		return objKindNames[k]
	}
	return fmt.Sprintf("obj(%d)", uint8(k))
}

// ObjKind is the kind of object the operation works on.
func (s SysOp) ObjKind() ObjKind {
	switch s {
	case SysPipeWrite, SysPipeRead, SysPipeWake, SysPipeWait:
		return ObjPipe
	case SysSockAllocSend, SysSockWaitWmem, SysUnixQueue, SysUnixPeek, SysUnixConsume, SysUnixDataWait:
		return ObjUnixStream
	case SysLockSock, SysReleaseSock, SysTCPXmit, SysTCPRecv, SysSkWaitData:
		return ObjTCP
	case SysFutexSet, SysFutexPost, SysFutexWait, SysXlistAdd, SysXlistWakeAll:
		return ObjThread
	case SysUSpinLock, SysUSpinUnlock:
		return ObjUserLocks
	}
	return ObjNone
}
