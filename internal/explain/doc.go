// Package explain turns a failing deterministic run into the report a
// kernel developer reads on the mailing list: one column per CPU, one row
// per step that matters, each step a kernel function with the locks it
// holds and the state it reads and writes, then what broke.
//
// Its input is a trace.Watch recording of the failing run (every lock
// taken and dropped, every read and write of the protocol's state, each
// with its CPU and kernel call path). Analyze slices it: from the state
// the broken invariant looked at, it follows each value back to the write
// that made it (data dependence), from a write to the reads its function
// made before it (what the decision rested on), from a read to the write
// another CPU made right after it (a value read, then made stale: the
// race), and from a write to the reads that looked just before it (a check
// that missed it). What is left is laid out in rows by CPU and rendered as
// plain text that fits a mail, or as Markdown.
//
// The package knows nothing of the machine: names, paths and the
// violation come in as plain values (Input), so it is tested on
// hand-written step lists as well as on real runs.
package explain
