// Package stats holds proxysim's counters and histograms: per-CPU counter
// blocks (the kernel's schedstat, /proc/schedstat) written only by their
// own CPU and read by scrapes and summaries, and small log-linear latency
// histograms for per-task wait times.
package stats
