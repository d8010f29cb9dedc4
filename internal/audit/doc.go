// Package audit is proxysim's stop-the-world check of the global
// invariants (package check lists them), run with every CPU
// parked at an epoch barrier, so it reads without locks: each task in
// exactly one place, counts agree, blocked_on chains agree with mutex wait
// lists and are acyclic, sleeping-owner lists agree with on_rq, no
// woken donor left unplaced, every runnable task makes progress, runtime
// adds up. The machine adds its own stop-the-world checks after it: core
// scheduling's cookies and, with CPU hotplug, nothing queued or running on
// an offline CPU (invariant 48, internal/cpu/hotplug.go).
//
// It sits above rq and mutex (it reads both); the invariant ids and the
// reporter it reports to are in the leaf package check, which rq and
// mutex use for their own inline checks.
package audit
