// Package trace is proxysim's flight recorder: one fixed-size ring of
// events per CPU (like the kernel's per-CPU ftrace ring buffers), a global
// sequence number that orders events across CPUs, and the merged dump that
// goes into failure reports and Perfetto traces.
//
// Recording never allocates: an event is a small value copied into the
// ring. A ring is written only by its own CPU goroutine and read only
// after the machine has stopped (or, for the watchdog, with the CPU known
// to be stuck).
package trace
