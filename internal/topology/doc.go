// Package topology is the simulated machine's shape: sockets, last-level
// caches, cores and SMT threads, and the scheduling domains they give each
// CPU (kernel/sched/topology.c: the SMT, MC/LLC, PKG and machine-wide
// levels, with degenerate levels dropped as sd_degenerate() does).
//
// Notation: "2s-8llc-8c-2t" is 2 sockets, 8 LLCs per socket, 8 cores per
// LLC and 2 threads per core: 256 CPUs. Every number counts units inside
// one unit of the level before it, so the CPU count is their product.
//
// CPU numbering follows what Linux shows on the x86 servers of the
// benchmark reports: the first thread of every core gets the low numbers
// (cores in socket, LLC order), the second threads follow, so on the
// default 256-CPU machine cpu N and cpu N+128 are SMT siblings, cpus
// 0-7 and 128-135 share an LLC, and cpus 0-63 and 128-191 are socket 0.
package topology
