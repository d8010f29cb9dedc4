// Package metrics exposes a running simulated machine as Prometheus
// metrics: the counters the kernel keeps in /proc/schedstat and emits
// through the sched_stat_* and sched_migrate_task tracepoints, plus
// proxysim's own proxy-execution counters, lock-contention histograms and
// invariant-violation counts.
//
// A Collector reads the machine's per-CPU atomics at scrape time only:
// the hot path is untouched (it already does per-CPU atomic adds), and a
// scrape never stops a CPU. The Source a Collector reads can be swapped
// atomically between runs (SetSource).
//
// Naming follows the Prometheus conventions: everything is under the
// proxysim_ prefix, in base units (seconds), counters end in _total, and
// the only label of per-CPU series is cpu. Histograms are built from the
// simulator's power-of-two buckets (bucket i counts integer values v with
// 2^(i-1) <= v < 2^i), so their le bounds are 0, 1, 3, 7, 15, ... and
// +Inf, and they are never per-CPU.
//
// NewRegistry builds a dedicated registry (never the global one), Handler
// serves it, and Serve runs a small loopback-by-default HTTP server with
// /metrics and an index page. ResolveAddr turns the --metrics-addr flag
// into a listen address, and ScrapeLoop drives scrapes for overhead
// measurements.
package metrics
