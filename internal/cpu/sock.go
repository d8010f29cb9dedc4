// This file mirrors the socket paths of the benchmark workloads:
//
//   - an AF_UNIX stream pair (net/unix/af_unix.c, torvalds/linux
//     @001a25088c35: unix_stream_sendmsg, unix_stream_read_generic,
//     unix_stream_data_wait; net/core/sock.c: sock_alloc_send_pskb,
//     sock_wait_for_wmem, sock_wfree and the unix_write_space it calls).
//     The only struct mutex on these paths is the reader's u->iolock
//     (unix_stream_read_generic holds it across the read, and drops it
//     to wait); the sender takes none. The queue is guarded by the
//     receiver's u->lock (unix_state_lock), a spinlock.
//   - a loopback TCP connection (net/core/sock.c @2491b544ff3a:
//     lock_sock_nested, __lock_sock, release_sock, __release_sock,
//     sk_wait_data; net/ipv4/tcp.c, tcp_ipv4.c: tcp_sendmsg,
//     tcp_recvmsg, tcp_v4_rcv). lock_sock is not a mutex: sk_lock.slock (a
//     spinlock) guards sk_lock.owned, and a task that finds the socket
//     owned sleeps on sk_lock.wq (exclusive, TASK_UNINTERRUPTIBLE) with
//     no blocked_on, so proxy execution never sees it. The receive path
//     runs in the sender's context on its own CPU (loopback_xmit's
//     netif_rx and the NET_RX softirq at local_bh_enable): under
//     bh_lock_sock it queues the segment, or puts it on the backlog if the
//     socket's user owns it, and release_sock processes the backlog.

package cpu

import (
	"fmt"
	"sync/atomic"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/spinlock"
	"github.com/proxysim/proxysim/internal/stats"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// unixStream is a connected AF_UNIX SOCK_STREAM pair as hackbench uses
// it: every sender writes into the sending end, one reader reads the
// receiving end.
type unixStream struct {
	id     int
	name   string
	iolock int   // the receiving end's u->iolock: a machine mutex
	sndbuf int64 // the sending end's sk_sndbuf
	// wmem is the sending end's sk_wmem_alloc (a refcount_t, read without
	// a lock by sock_alloc_send_pskb and unix_writable): an atomic.
	wmem atomic.Int64
	// sSleep is the sending end's sk_sleep: senders waiting for
	// sk_wmem_alloc to drop (sock_wait_for_wmem).
	sSleep *waitQueue
	// state is the receiving end's u->lock (unix_state_lock). rcvq is its
	// sk_receive_queue, the truesize of each skb, oldest first: guarded by
	// state in the model (the kernel's queue lock nests inside it).
	state spinlock.Lock
	rcvq  []int64
	// rSleep is the receiving end's sk_sleep: the reader waiting for data.
	rSleep *waitQueue
}

func newUnixStream(id int, s ObjSpec) *unixStream {
	u := &unixStream{id: id, name: s.Name, iolock: s.Mutex, sndbuf: int64(s.Size),
		sSleep: newWaitQueue(1<<20 + 2*id), rSleep: newWaitQueue(1<<20 + 2*id + 1)}
	u.state.Init(spinlock.ClassUnixState, id)
	return u
}

// sockAllocSend is sock_alloc_send_pskb on the sending end for an skb of
// op.Min bytes of truesize: while sk_wmem_alloc is below sk_sndbuf the
// skb is allocated and charged (skb_set_owner_w); else SOCK_NOSPACE and
// the wait (op.Jump).
func (cp *CPU) sockAllocSend(p *task.Task, op *task.Op, u *unixStream) {
	if u.wmem.Load() < u.sndbuf {
		u.wmem.Add(op.Min)
		p.Exec.PC++
		return
	}
	cp.c.Inc(stats.SndbufWaits)
	cp.c.Emit(trace.EvSys, int32(p.ID), int32(op.Sys), int32(u.id), trace.SysWaits)
	p.Exec.PC = op.Jump
}

// sockWaitWmem is sock_wait_for_wmem: prepare_to_wait on the sending
// end's sk_sleep (not exclusive: every waiting sender wakes) until
// sk_wmem_alloc is below sk_sndbuf.
func (cp *CPU) sockWaitWmem(p *task.Task, op *task.Op, u *unixStream) {
	if cp.waitEvent(p, op, u.sSleep, false, func() bool { return u.wmem.Load() < u.sndbuf }) {
		p.Exec.PC++
	}
}

// unixQueue is unix_stream_sendmsg's queueing of the skb (op.Min bytes
// of truesize) on the receiving end: skb_queue_tail under
// unix_state_lock, then sk_data_ready (sock_def_readable: if a reader
// sleeps, wake_up_interruptible_sync_poll).
func (cp *CPU) unixQueue(p *task.Task, op *task.Op, u *unixStream) {
	c := cp.c
	u.state.Lock(c.CPU)
	u.rcvq = append(u.rcvq, op.Min)
	u.state.Unlock(c.CPU)
	if u.rSleep.active() {
		cp.wakeUp(u.rSleep, task.WakeInterruptible, 1)
	}
	p.Exec.PC++
}

// unixPeek is unix_stream_read_generic's skb_peek under unix_state_lock,
// with u->iolock held: an empty queue goes to the wait (op.Jump).
func (cp *CPU) unixPeek(p *task.Task, op *task.Op, u *unixStream) {
	c := cp.c
	if !holds(p, u.iolock) {
		cp.m.Report(c, check.InvMutexMisuse, p, fmt.Sprintf("%v: %s on %s without u->iolock (%v) held", p, op.Sys, u.name, cp.m.mutexes[u.iolock]))
	}
	u.state.Lock(c.CPU)
	empty := len(u.rcvq) == 0
	u.state.Unlock(c.CPU)
	if empty {
		c.Inc(stats.SockEmpty)
		c.Emit(trace.EvSys, int32(p.ID), int32(op.Sys), int32(u.id), trace.SysWaits)
		p.Exec.PC = op.Jump
		return
	}
	p.Exec.PC++
}

// unixConsume is the end of the read of a whole skb: skb_unlink, then
// consume_skb, whose destructor (sock_wfree on the sending end) returns
// its truesize to sk_wmem_alloc and calls sk_write_space, unix_write_space:
// if the sending end is writable again (sk_wmem_alloc at most a quarter
// of sk_sndbuf, unix_writable) its sleepers are woken.
func (cp *CPU) unixConsume(p *task.Task, op *task.Op, u *unixStream) {
	c := cp.c
	u.state.Lock(c.CPU)
	var ts int64
	if len(u.rcvq) > 0 {
		ts = u.rcvq[0]
		u.rcvq = u.rcvq[1:]
	}
	u.state.Unlock(c.CPU)
	if ts > 0 {
		p.Stats.Requests++ // a message read: the benchmark's count
		w := u.wmem.Add(-ts)
		if w<<2 <= u.sndbuf && u.sSleep.active() {
			cp.wakeUp(u.sSleep, task.WakeInterruptible, 1)
		}
	}
	p.Exec.PC++
}

// unixDataWait is the empty-queue path of unix_stream_read_generic:
// mutex_unlock(&u->iolock), then unix_stream_data_wait: under
// unix_state_lock, prepare_to_wait on sk_sleep and, while the queue is
// still empty, unlock and schedule. The program re-locks u->iolock next
// and peeks again.
func (cp *CPU) unixDataWait(p *task.Task, op *task.Op, u *unixStream) {
	c := cp.c
	ex := &p.Exec
	if ex.Phase == 0 && !ex.Sys.Restart {
		if !cp.unlock(p, u.iolock) {
			cp.m.Report(c, check.InvMutexMisuse, p, fmt.Sprintf("%v: %s on %s without u->iolock held", p, op.Sys, u.name))
		}
	}
	ex.Sys.Restart = false
	ex.Phase = 1
	u.state.Lock(c.CPU)
	if !cp.prepareToWaitEvent(u.rSleep, p, false, task.Interruptible) {
		u.state.Unlock(c.CPU)
		p.SetState(task.Running)
		ex.Phase = 0
		ex.Sys.Restart = true
		return
	}
	if len(u.rcvq) > 0 {
		u.state.Unlock(c.CPU)
		cp.finishWait(u.rSleep, p)
		ex.Phase = 0
		ex.PC++
		return
	}
	u.state.Unlock(c.CPU)
	c.Inc(stats.WaitQueueSleeps)
	c.Emit(trace.EvSys, int32(p.ID), int32(op.Sys), int32(u.id), trace.SysSleep)
	cp.schedule(false)
}

// tcpSock is one end's struct sock of a loopback TCP connection.
type tcpSock struct {
	// slock is sk_lock.slock. It guards owned (sk_lock.owned) and owner
	// (the task that owns it: the model's check), rcvq (the segments on
	// sk_receive_queue: the kernel's queue has its own lock, but while the
	// user owns the socket the receive path goes to the backlog instead)
	// and backlog (sk_backlog).
	slock   spinlock.Lock
	owned   bool
	owner   *task.Task
	rcvq    int
	backlog int
	// queued mirrors rcvq for sk_wait_event's condition, evaluated after
	// release_sock without the lock (skb_peek_tail): written under slock.
	queued atomic.Int32
	// lockWQ is sk_lock.wq; sleep is sk_sleep (sk->sk_wq->wait).
	lockWQ, sleep *waitQueue
}

// tcpConn is a loopback TCP connection: end 0 (the client's socket) and
// end 1 (the server's).
type tcpConn struct {
	id   int
	name string
	end  [2]tcpSock
}

func newTCPConn(id int, s ObjSpec) *tcpConn {
	t := &tcpConn{id: id, name: s.Name}
	for e := range t.end {
		sk := &t.end[e]
		sk.slock.Init(spinlock.ClassSockLock, 2*id+e)
		sk.lockWQ = newWaitQueue(1<<21 + 4*id + 2*e)
		sk.sleep = newWaitQueue(1<<21 + 4*id + 2*e + 1)
	}
	return t
}

func (t *tcpConn) sock(op *task.Op) *tcpSock { return &t.end[op.Count&1] }

// lockSock is lock_sock_nested: under sk_lock.slock, a socket nobody
// owns becomes the caller's; else __lock_sock: prepare_to_wait_exclusive
// on sk_lock.wq (TASK_UNINTERRUPTIBLE), drop slock, schedule, retake it,
// until the socket is free.
func (cp *CPU) lockSock(p *task.Task, op *task.Op, t *tcpConn) {
	c := cp.c
	ex := &p.Exec
	sk := t.sock(op)
	sk.slock.Lock(c.CPU)
	if ex.Phase == 1 && !sk.owned {
		cp.finishWait(sk.lockWQ, p)
	}
	if !sk.owned {
		sk.owned, sk.owner = true, p
		sk.slock.Unlock(c.CPU)
		c.Inc(stats.SockLocks)
		ex.Phase = 0
		ex.PC++
		return
	}
	if sk.owner == p {
		sk.slock.Unlock(c.CPU)
		cp.m.Report(c, check.InvMutexMisuse, p, fmt.Sprintf("%v: lock_sock of %s end %d, which it owns: self-deadlock", p, t.name, op.Count&1))
		ex.PC++
		return
	}
	if ex.Phase == 0 {
		c.Inc(stats.SockLockWaits)
		c.Emit(trace.EvSys, int32(p.ID), int32(op.Sys), int32(t.id), trace.SysWaits)
	}
	ex.Phase = 1
	cp.prepareToWaitEvent(sk.lockWQ, p, true, task.Uninterruptible)
	sk.slock.Unlock(c.CPU)
	c.Inc(stats.WaitQueueSleeps)
	cp.schedule(false)
}

// releaseSock is release_sock: under sk_lock.slock, the backlog is
// processed (__release_sock: slock dropped, each segment op.Min ns of
// receive processing, queued and sk_data_ready), ownership dropped, and
// one sk_lock.wq waiter woken if any.
func (cp *CPU) releaseSock(p *task.Task, op *task.Op, t *tcpConn, sk *tcpSock) {
	c := cp.c
	sk.slock.Lock(c.CPU)
	if !sk.owned || sk.owner != p {
		sk.slock.Unlock(c.CPU)
		cp.m.Report(c, check.InvMutexMisuse, p, fmt.Sprintf("%v: release_sock of %s end %d, which it does not own", p, t.name, op.Count&1))
		return
	}
	for sk.backlog > 0 {
		n := sk.backlog
		sk.backlog = 0
		sk.slock.Unlock(c.CPU)
		cp.advance(op.Min * int64(n))
		sk.slock.Lock(c.CPU)
		sk.rcvq += n
		sk.queued.Store(int32(sk.rcvq))
		if sk.sleep.active() {
			cp.wakeUp(sk.sleep, task.WakeInterruptible, 1)
		}
	}
	sk.owned, sk.owner = false, nil
	if sk.lockWQ.active() {
		cp.wakeUp(sk.lockWQ, task.WakeNormal, 1)
	}
	sk.slock.Unlock(c.CPU)
}

func (cp *CPU) releaseSockOp(p *task.Task, op *task.Op, t *tcpConn) {
	cp.releaseSock(p, op, t, t.sock(op))
	p.Exec.PC++
}

// tcpXmit is a segment's way from end op.Count to the other end over
// loopback, all on this CPU in the sender's context: op.Min ns of
// receive processing (netif_rx, the NET_RX softirq, ip_rcv, tcp_v4_rcv),
// then under the peer's bh_lock_sock the segment is queued and
// sk_data_ready wakes a sleeping reader, or, if the peer's user owns the
// socket, it goes on the backlog for release_sock.
func (cp *CPU) tcpXmit(p *task.Task, op *task.Op, t *tcpConn) {
	c := cp.c
	cp.advance(op.Min)
	peer := &t.end[1-op.Count&1]
	peer.slock.Lock(c.CPU)
	if peer.owned {
		peer.backlog++
		c.Inc(stats.SockBacklog)
		c.Emit(trace.EvSys, int32(peer.owner.ID), int32(op.Sys), int32(t.id), trace.SysBacklog)
	} else {
		peer.rcvq++
		peer.queued.Store(int32(peer.rcvq))
		if peer.sleep.active() {
			cp.wakeUp(peer.sleep, task.WakeInterruptible, 1)
		}
	}
	peer.slock.Unlock(c.CPU)
	p.Exec.PC++
}

// tcpRecv is tcp_recvmsg_locked's look at the receive queue of end
// op.Count, lock_sock held: a segment is taken, or the wait (op.Jump).
func (cp *CPU) tcpRecv(p *task.Task, op *task.Op, t *tcpConn) {
	c := cp.c
	sk := t.sock(op)
	sk.slock.Lock(c.CPU)
	if sk.owner != p {
		sk.slock.Unlock(c.CPU)
		cp.m.Report(c, check.InvMutexMisuse, p, fmt.Sprintf("%v: tcp_recvmsg on %s end %d without lock_sock", p, t.name, op.Count&1))
		p.Exec.PC++
		return
	}
	if sk.rcvq > 0 {
		sk.rcvq--
		sk.queued.Store(int32(sk.rcvq))
		sk.slock.Unlock(c.CPU)
		p.Stats.Requests++ // a message received: the benchmark's count
		p.Exec.PC++
		return
	}
	sk.slock.Unlock(c.CPU)
	c.Inc(stats.SockEmpty)
	c.Emit(trace.EvSys, int32(p.ID), int32(op.Sys), int32(t.id), trace.SysWaits)
	p.Exec.PC = op.Jump
}

// skWaitData is sk_wait_data on end op.Count: add_wait_queue on sk_sleep
// with woken_wake_function, then sk_wait_event: release_sock, and if the
// receive queue is still empty wait_woken (TASK_INTERRUPTIBLE; no sleep
// if WQ_FLAG_WOKEN is already set); then WQ_FLAG_WOKEN cleared and the
// entry removed. The program takes lock_sock next and looks again (one
// wait per call, as tcp_recvmsg's loop does).
func (cp *CPU) skWaitData(p *task.Task, op *task.Op, t *tcpConn) {
	c := cp.c
	ex := &p.Exec
	sk := t.sock(op)
	done := func() {
		p.SetState(task.Running)
		p.Wait.Woken.Store(false)
		sk.sleep.lock.Lock(c.CPU) // remove_wait_queue
		sk.sleep.del(p)
		sk.sleep.lock.Unlock(c.CPU)
		ex.Phase = 0
		ex.PC++
	}
	if ex.Phase == 1 {
		done()
		return
	}
	sk.sleep.lock.Lock(c.CPU) // add_wait_queue
	p.Wait.Woken.Store(false)
	sk.sleep.add(p, false, true)
	sk.sleep.lock.Unlock(c.CPU)
	cp.releaseSock(p, op, t, sk)
	if sk.queued.Load() > 0 {
		done()
		return
	}
	p.SetState(task.Interruptible)
	if p.Wait.Woken.Load() {
		done()
		return
	}
	ex.Phase = 1
	c.Inc(stats.WaitQueueSleeps)
	c.Emit(trace.EvSys, int32(p.ID), int32(op.Sys), int32(t.id), trace.SysSleep)
	cp.schedule(false)
}
