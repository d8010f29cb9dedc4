// Package workload describes what the simulated machine runs: scenarios
// (CPUs, mutexes, task groups and their programs), the built-in workloads
// (mixed, locktorture, pi, stress) and the scenario-file format, a strict
// JSON dialect in the spirit of rt-app's task files.
//
// It mirrors no kernel file; its built-in workloads follow
// kernel/locking/locktorture.c (nested_locks, long_hold, rt_boost) and the
// classic priority-inversion set-up (a high-priority RT task needing a lock
// held by a low-priority fair task while medium RT tasks hog the CPUs).
package workload
