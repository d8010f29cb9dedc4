// This file is the audit of rq->core_tree (invariant 62; the tree is
// internal/rq/coretree.go).

package cpu

import "github.com/proxysim/proxysim/internal/check"

// auditCoreTree is invariant 62's audit half: every runqueue's core_tree
// is a red-black tree holding exactly its queued, non-delayed tasks with
// a cookie (rq.AuditCoreTree). It reports whether it found a problem.
func (m *Machine) auditCoreTree() bool {
	for _, r := range m.rqs {
		if msg := r.AuditCoreTree(); msg != "" {
			m.warn(nil, check.InvCoreTree, -1, "", msg)
			return true
		}
	}
	return false
}
