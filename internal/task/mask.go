package task

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// MaxCPUs is the largest machine proxysim models (NR_CPUS).
const MaxCPUs = 1024

// Mask is a cpumask for up to MaxCPUs CPUs.
type Mask [MaxCPUs / 64]uint64

// MaskAll returns a mask with CPUs 0..n-1 set.
func MaskAll(n int) Mask {
	var m Mask
	for i := 0; i < n; i++ {
		m.Set(i)
	}
	return m
}

// MaskOf returns a mask with the given CPUs set.
func MaskOf(cpus ...int) Mask {
	var m Mask
	for _, c := range cpus {
		m.Set(c)
	}
	return m
}

func (m *Mask) Set(cpu int)      { m[cpu>>6] |= 1 << (cpu & 63) }
func (m *Mask) Has(cpu int) bool { return cpu >= 0 && cpu < MaxCPUs && m[cpu>>6]&(1<<(cpu&63)) != 0 }

// Weight is cpumask_weight.
func (m *Mask) Weight() int {
	n := 0
	for _, w := range m {
		n += bits.OnesCount64(w)
	}
	return n
}

// Next returns the first set CPU >= cpu, or -1.
func (m *Mask) Next(cpu int) int {
	for cpu < MaxCPUs {
		w := m[cpu>>6] >> (cpu & 63)
		if w != 0 {
			return cpu + bits.TrailingZeros64(w)
		}
		cpu = (cpu | 63) + 1
	}
	return -1
}

// And returns the intersection of two masks.
func (m Mask) And(o Mask) Mask {
	for i := range m {
		m[i] &= o[i]
	}
	return m
}

// Empty reports whether no CPU is set.
func (m *Mask) Empty() bool {
	for _, w := range m {
		if w != 0 {
			return false
		}
	}
	return true
}

// String prints the mask in cpulist form, e.g. "0-3,8".
func (m Mask) String() string {
	var b strings.Builder
	for c := m.Next(0); c >= 0; {
		e := c
		for m.Has(e + 1) {
			e++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if e == c {
			b.WriteString(strconv.Itoa(c))
		} else {
			fmt.Fprintf(&b, "%d-%d", c, e)
		}
		c = m.Next(e + 1)
		if e+1 >= MaxCPUs {
			break
		}
	}
	return b.String()
}

// ParseMask parses a cpulist ("0-3,8,10-11") for a machine of ncpu CPUs.
func ParseMask(s string, ncpu int) (Mask, error) {
	var m Mask
	s = strings.TrimSpace(s)
	if s == "" {
		return m, fmt.Errorf("empty cpu list")
	}
	if s == "all" || s == "*" {
		return MaskAll(ncpu), nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return m, fmt.Errorf("bad cpu %q in list %q", lo, s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return m, fmt.Errorf("bad cpu %q in list %q", hi, s)
			}
		}
		if a < 0 || b < a || b >= ncpu {
			return m, fmt.Errorf("cpu range %q outside 0-%d", part, ncpu-1)
		}
		for c := a; c <= b; c++ {
			m.Set(c)
		}
	}
	return m, nil
}
