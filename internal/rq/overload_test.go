package rq

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// ForEach visits exactly the set bits, in order from start, wrapping, for
// masks of several sizes (one word, a partial last word, many words).
func TestOverloadMaskForEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 63, 64, 65, 130, 256, 1000} {
		for trial := 0; trial < 50; trial++ {
			m := NewOverloadMask(n)
			set := make([]bool, n)
			for cpu := 0; cpu < n; cpu++ {
				if rng.IntN(4) == 0 {
					m.set(cpu)
					set[cpu] = true
				}
			}
			// Clear a few again: clear must leave the other bits alone.
			for k := 0; k < 3; k++ {
				cpu := rng.IntN(n)
				m.clear(cpu)
				set[cpu] = false
			}
			start := rng.IntN(n)
			var want []int
			for i := 0; i < n; i++ {
				if cpu := (start + i) % n; set[cpu] {
					want = append(want, cpu)
				}
			}
			var got []int
			m.ForEach(start, n, func(cpu int) bool { got = append(got, cpu); return true })
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d start=%d: visited %v, want %v", n, start, got, want)
			}
			if len(want) > 1 {
				var first []int
				m.ForEach(start, n, func(cpu int) bool { first = append(first, cpu); return false })
				if !slices.Equal(first, want[:1]) {
					t.Fatalf("n=%d: stopping after the first visit gave %v, want %v", n, first, want[:1])
				}
			}
		}
	}
}
