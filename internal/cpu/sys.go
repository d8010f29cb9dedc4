// This file holds the kernel (and user-space) objects of the benchmark
// workloads and dispatches the OpSys instruction to the file that models
// each: pipe.go (fs/pipe.c), sock.go (net/core/sock.c, net/unix/af_unix.c,
// the loopback TCP path), futex.go (kernel/futex/waitwake.c and schbench's
// user-space side). The sleeping locks of those paths that are struct
// mutex are the machine's mutexes, taken by lock/unlock instructions.

package cpu

import (
	"fmt"

	"github.com/proxysim/proxysim/internal/task"
)

// ObjSpec describes a kernel object to create (AddObject).
type ObjSpec struct {
	Kind task.ObjKind
	Name string
	// Mutex is the object's struct mutex, a machine mutex (AddMutex):
	// pipe->mutex of a pipe, the receiving end's u->iolock of a unix
	// stream pair; -1 for none.
	Mutex int
	// Size is the pipe's ring (pipe->max_usage, in buffers), or the
	// sending end's sk_sndbuf in bytes for a unix stream pair, or the
	// number of locks of a user lock array (0: one per CPU).
	Size int
	// Msg is a thread's message thread (another ObjThread object), or -1
	// for a message thread itself.
	Msg int
}

// AddObject creates a kernel object and returns its index (OpSys's Obj).
// Only before Start.
func (m *Machine) AddObject(s ObjSpec) (int, error) {
	if m.started {
		return 0, fmt.Errorf("cpu: AddObject after Start")
	}
	id := len(m.objs)
	if s.Mutex >= len(m.mutexes) {
		return 0, fmt.Errorf("cpu: object %s: mutex %d out of range", s.Name, s.Mutex)
	}
	var o any
	switch s.Kind {
	case task.ObjPipe:
		if s.Mutex < 0 || s.Size < 1 || s.Size > pipeMaxRing {
			return 0, fmt.Errorf("cpu: pipe %s needs a mutex and a ring of 1-%d buffers", s.Name, pipeMaxRing)
		}
		o = newPipe(id, s)
	case task.ObjUnixStream:
		if s.Mutex < 0 || s.Size < 1 {
			return 0, fmt.Errorf("cpu: unix stream %s needs u->iolock and sk_sndbuf", s.Name)
		}
		o = newUnixStream(id, s)
	case task.ObjTCP:
		o = newTCPConn(id, s)
	case task.ObjThread:
		if s.Msg >= id {
			return 0, fmt.Errorf("cpu: thread %s: message thread %d must be created first", s.Name, s.Msg)
		}
		if s.Msg >= 0 {
			if mt, ok := m.objs[s.Msg].(*uthread); !ok || mt.msg != nil {
				return 0, fmt.Errorf("cpu: thread %s: object %d is not a message thread", s.Name, s.Msg)
			}
		}
		t := &uthread{id: id, name: s.Name}
		if s.Msg >= 0 {
			t.msg = m.objs[s.Msg].(*uthread)
		}
		t.hb.lock.Init(spinLockClassFutex, id)
		o = t
	case task.ObjUserLocks:
		n := s.Size
		if n <= 0 {
			n = len(m.cpus)
		}
		o = &userLocks{id: id, name: s.Name, held: make([]int32Word, n)}
	default:
		return 0, fmt.Errorf("cpu: object %s: unknown kind %v", s.Name, s.Kind)
	}
	m.objs = append(m.objs, o)
	m.objKinds = append(m.objKinds, s.Kind)
	return id, nil
}

// checkSysOps refuses a program whose OpSys instructions name objects
// that do not exist or are of another kind.
func (m *Machine) checkSysOps(name string, pr *task.Program) error {
	for i, op := range pr.Ops {
		if op.Kind != task.OpSys {
			continue
		}
		k := op.Sys.ObjKind()
		if k == task.ObjNone {
			continue
		}
		if op.Obj >= len(m.objs) {
			return fmt.Errorf("cpu: task %s: op %d (%s): object %d out of range 0-%d", name, i, op.Sys, op.Obj, len(m.objs)-1)
		}
		if m.objKinds[op.Obj] != k {
			return fmt.Errorf("cpu: task %s: op %d (%s) works on a %v, object %d is a %v", name, i, op.Sys, k, op.Obj, m.objKinds[op.Obj])
		}
	}
	return nil
}

// opSys runs one step of a benchmark path on a kernel object.
func (cp *CPU) opSys(p *task.Task, op *task.Op) {
	switch op.Sys {
	case task.SysPipeWrite:
		cp.pipeWrite(p, op, cp.m.objs[op.Obj].(*pipe))
	case task.SysPipeRead:
		cp.pipeRead(p, op, cp.m.objs[op.Obj].(*pipe))
	case task.SysPipeWake:
		cp.pipeWake(p, op, cp.m.objs[op.Obj].(*pipe))
	case task.SysPipeWait:
		cp.pipeWait(p, op, cp.m.objs[op.Obj].(*pipe))
	case task.SysSockAllocSend:
		cp.sockAllocSend(p, op, cp.m.objs[op.Obj].(*unixStream))
	case task.SysSockWaitWmem:
		cp.sockWaitWmem(p, op, cp.m.objs[op.Obj].(*unixStream))
	case task.SysUnixQueue:
		cp.unixQueue(p, op, cp.m.objs[op.Obj].(*unixStream))
	case task.SysUnixPeek:
		cp.unixPeek(p, op, cp.m.objs[op.Obj].(*unixStream))
	case task.SysUnixConsume:
		cp.unixConsume(p, op, cp.m.objs[op.Obj].(*unixStream))
	case task.SysUnixDataWait:
		cp.unixDataWait(p, op, cp.m.objs[op.Obj].(*unixStream))
	case task.SysLockSock:
		cp.lockSock(p, op, cp.m.objs[op.Obj].(*tcpConn))
	case task.SysReleaseSock:
		cp.releaseSockOp(p, op, cp.m.objs[op.Obj].(*tcpConn))
	case task.SysTCPXmit:
		cp.tcpXmit(p, op, cp.m.objs[op.Obj].(*tcpConn))
	case task.SysTCPRecv:
		cp.tcpRecv(p, op, cp.m.objs[op.Obj].(*tcpConn))
	case task.SysSkWaitData:
		cp.skWaitData(p, op, cp.m.objs[op.Obj].(*tcpConn))
	case task.SysFutexSet:
		cp.m.objs[op.Obj].(*uthread).futex.Store(int32(op.Min))
		p.Exec.PC++
	case task.SysFutexPost:
		cp.fpost(p, op, cp.m.objs[op.Obj].(*uthread))
		p.Exec.PC++
	case task.SysFutexWait:
		cp.fwait(p, op, cp.m.objs[op.Obj].(*uthread))
	case task.SysXlistAdd:
		cp.xlistAdd(p, cp.m.objs[op.Obj].(*uthread))
	case task.SysXlistWakeAll:
		cp.xlistWakeAll(p, op, cp.m.objs[op.Obj].(*uthread))
	case task.SysUSpinLock:
		cp.uspinLock(p, op, cp.m.objs[op.Obj].(*userLocks))
	case task.SysUSpinUnlock:
		cp.uspinUnlock(p, op, cp.m.objs[op.Obj].(*userLocks))
	case task.SysReqStart:
		p.Exec.Sys.Stamp = cp.c.Now
		p.Exec.PC++
	case task.SysReqEnd:
		if s := p.Exec.Sys.Stamp; s > 0 {
			p.Stats.ReqLatency.Add(cp.c.Now - s)
			p.Stats.Requests++
			p.Exec.Sys.Stamp = 0
		}
		p.Exec.PC++
	default:
		p.Exec.PC++
	}
}

// holds reports whether p holds machine mutex id (the checks of paths
// that run under a struct mutex).
func holds(p *task.Task, id int) bool {
	for _, h := range p.Exec.Held {
		if h == id {
			return true
		}
	}
	return false
}
