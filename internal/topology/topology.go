package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxCPUs bounds the machines the package describes (task.MaxCPUs).
const MaxCPUs = 1024

// Level names a scheduling-domain level, smallest first.
type Level uint8

const (
	LevelSMT     Level = iota // threads of one core
	LevelLLC                  // cores sharing a last-level cache (MC)
	LevelPKG                  // one socket
	LevelMachine              // every CPU (the NUMA level across sockets)
	NumLevels
)

var levelNames = [NumLevels]string{"SMT", "LLC", "PKG", "MACHINE"}

func (l Level) String() string {
	if l < NumLevels {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// Domain is one scheduling domain of a CPU: its level and the CPUs it
// spans (sorted), the CPU itself included.
type Domain struct {
	Level Level
	CPUs  []int
}

// Topology is a machine's shape. Immutable once built.
type Topology struct {
	Sockets        int // sockets in the machine
	LLCsPerSocket  int // last-level caches per socket
	CoresPerLLC    int // cores per LLC
	ThreadsPerCore int // SMT threads per core

	ncpu    int
	core    []int // cpu -> core index (socket-major, LLC order)
	llc     []int // cpu -> LLC index
	socket  []int // cpu -> socket index
	leader  []int // cpu -> lowest CPU of its core (rq->core)
	domains [][]Domain
}

// New builds the topology of the given shape.
func New(sockets, llcsPerSocket, coresPerLLC, threadsPerCore int) (*Topology, error) {
	for _, v := range []struct {
		n    int
		what string
	}{{sockets, "sockets"}, {llcsPerSocket, "LLCs per socket"}, {coresPerLLC, "cores per LLC"}, {threadsPerCore, "threads per core"}} {
		if v.n < 1 {
			return nil, fmt.Errorf("topology: %s must be at least 1, not %d", v.what, v.n)
		}
	}
	n := sockets * llcsPerSocket * coresPerLLC * threadsPerCore
	if n > MaxCPUs {
		return nil, fmt.Errorf("topology: %d CPUs, at most %d", n, MaxCPUs)
	}
	t := &Topology{Sockets: sockets, LLCsPerSocket: llcsPerSocket, CoresPerLLC: coresPerLLC, ThreadsPerCore: threadsPerCore, ncpu: n}
	ncores := n / threadsPerCore
	t.core = make([]int, n)
	t.llc = make([]int, n)
	t.socket = make([]int, n)
	t.leader = make([]int, n)
	for thread := 0; thread < threadsPerCore; thread++ {
		for k := 0; k < ncores; k++ {
			cpu := thread*ncores + k
			t.core[cpu] = k
			t.llc[cpu] = k / coresPerLLC
			t.socket[cpu] = k / (coresPerLLC * llcsPerSocket)
			t.leader[cpu] = k // thread 0 of core k is cpu k
		}
	}
	t.domains = make([][]Domain, n)
	for cpu := 0; cpu < n; cpu++ {
		key := [NumLevels]func(int) int{
			LevelSMT:     func(o int) int { return t.core[o] },
			LevelLLC:     func(o int) int { return t.llc[o] },
			LevelPKG:     func(o int) int { return t.socket[o] },
			LevelMachine: func(int) int { return 0 },
		}
		prev := 0
		for l := LevelSMT; l < NumLevels; l++ {
			var span []int
			for o := 0; o < n; o++ {
				if key[l](o) == key[l](cpu) {
					span = append(span, o)
				}
			}
			// A level that spans no more than the one below it (or only
			// the CPU itself) is degenerate and dropped.
			if len(span) <= max(prev, 1) {
				continue
			}
			t.domains[cpu] = append(t.domains[cpu], Domain{Level: l, CPUs: span})
			prev = len(span)
		}
	}
	return t, nil
}

// Parse reads the "2s-8llc-8c-2t" notation. Each part is a count and a
// unit: s (sockets), llc (LLCs per socket), c (cores per LLC), t (threads
// per core); all four, in that order.
func Parse(s string) (*Topology, error) {
	parts := strings.Split(s, "-")
	units := []string{"s", "llc", "c", "t"}
	if len(parts) != len(units) {
		return nil, fmt.Errorf("topology %q: want SOCKETSs-LLCSllc-CORESc-THREADSt, for example 2s-8llc-8c-2t", s)
	}
	var v [4]int
	for i, p := range parts {
		num, ok := strings.CutSuffix(p, units[i])
		if !ok {
			return nil, fmt.Errorf("topology %q: part %d (%q) must end in %q", s, i+1, p, units[i])
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("topology %q: %q is not a positive count of %s", s, num, units[i])
		}
		v[i] = n
	}
	return New(v[0], v[1], v[2], v[3])
}

// Default is the topology of an n-CPU machine when none is given: SMT2
// when n is even, LLCs of up to 8 cores (16 CPUs with SMT2, the
// sd_llc_size of the benchmark reports' machines), two sockets when the
// LLCs split evenly. For 256 CPUs that is the reports' machine,
// 2s-8llc-8c-2t: 2 sockets of 64 cores and 128 threads.
func Default(n int) *Topology {
	threads := 1
	if n%2 == 0 {
		threads = 2
	}
	cores := n / threads
	perLLC := 1
	for d := min(cores, 8); d >= 1; d-- {
		if cores%d == 0 {
			perLLC = d
			break
		}
	}
	llcs := cores / perLLC
	sockets := 1
	if llcs >= 2 && llcs%2 == 0 {
		sockets = 2
	}
	t, err := New(sockets, llcs/sockets, perLLC, threads)
	if err != nil {
		panic(err) // n out of range: callers check the CPU count first
	}
	return t
}

// String is the topology in Parse's notation.
func (t *Topology) String() string {
	return fmt.Sprintf("%ds-%dllc-%dc-%dt", t.Sockets, t.LLCsPerSocket, t.CoresPerLLC, t.ThreadsPerCore)
}

// NumCPUs is the number of CPUs.
func (t *Topology) NumCPUs() int { return t.ncpu }

// Core, LLC and Socket return a CPU's core, LLC and socket index.
func (t *Topology) Core(cpu int) int   { return t.core[cpu] }
func (t *Topology) LLC(cpu int) int    { return t.llc[cpu] }
func (t *Topology) Socket(cpu int) int { return t.socket[cpu] }

// CoreLeader is the lowest CPU of cpu's core (the CPU of rq->core).
func (t *Topology) CoreLeader(cpu int) int { return t.leader[cpu] }

// LockOrderKey orders rq locks as rq_order_less() does: by the core's
// CPU, then by the CPU, so that SMT siblings sharing their core's lock
// and double_rq_lock agree.
func (t *Topology) LockOrderKey(cpu int) int { return t.leader[cpu]<<16 | cpu }

// Domains returns cpu's scheduling domains, smallest first, degenerate
// levels dropped. The slices are shared: do not modify.
func (t *Topology) Domains(cpu int) []Domain { return t.domains[cpu] }

// Siblings returns the CPUs of cpu's SMT domain (cpu_smt_mask), cpu
// included; just cpu without SMT.
func (t *Topology) Siblings(cpu int) []int {
	if d := t.domains[cpu]; len(d) > 0 && d[0].Level == LevelSMT {
		return d[0].CPUs
	}
	return []int{cpu}
}

// LLCSpan returns the CPUs sharing cpu's last-level cache
// (sd_llc_shared's span), cpu included.
func (t *Topology) LLCSpan(cpu int) []int {
	for _, d := range t.domains[cpu] {
		if d.Level == LevelLLC {
			return d.CPUs
		}
		if d.Level > LevelLLC {
			break
		}
	}
	return t.Siblings(cpu)
}
