//go:build !race

package stats

import "sync/atomic"

// Bump adds n to a counter that only one goroutine writes (its CPU's, or
// the auditor's while every other CPU is parked): an atomic load and
// store, which readers (scrapes, summaries) see whole, without the locked
// read-modify-write of Add that the single writer does not need. Under
// the race detector (bump_race.go) the writer adds with a plain load and
// store the detector does not see: there every atomic operation is a
// synchronisation event.
func Bump(a *atomic.Uint64, n uint64) { a.Store(a.Load() + n) }
