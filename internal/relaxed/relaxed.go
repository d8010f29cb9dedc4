//go:build !race || !(amd64 || arm64)

package relaxed

import "sync/atomic"

// AddUint64 atomically adds n to *p and returns the new value, ordering
// nothing (atomic64_add_return_relaxed).
func AddUint64(p *atomic.Uint64, n uint64) uint64 { return p.Add(n) }
