//go:build !race

package spinlock

// setHolder records the holder (id+1, 0 when free). Written only by the
// holder, under the lock.
func (l *Lock) setHolder(v int32) { l.holder.Store(v) }
