package conductor

import (
	"math/rand/v2"
	"testing"
)

// The time strategy's tournament tree picks what the full scan picks
// (smallest clock among runnable, non-spinning participants, lowest index
// on a tie) through random clock moves, state changes and spins.
func TestTimeTreeMatchesScan(t *testing.T) {
	strat, err := ParseStrategy("time")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 16, 100, 256} {
		clocks := make([]int64, n)
		c := New(n, strat, 1, func(i int) int64 { return clocks[i] })
		ptrs := make([]*int64, n)
		for i := range ptrs {
			ptrs[i] = &clocks[i]
		}
		c.SetClocks(ptrs)
		rng := rand.New(rand.NewPCG(uint64(n), 7))
		for step := 0; step < 20000; step++ {
			i := rng.IntN(n)
			switch rng.IntN(4) {
			case 0, 1:
				clocks[i] += int64(rng.IntN(3)) * 1000 // ties are common
				c.fixLocked(i)
			case 2:
				c.setState(i, state(rng.IntN(3)))
			case 3:
				c.setSpinning(i, rng.IntN(2) == 0)
			}
			tree := c.tree
			c.tree = nil
			want := c.pickLocked()
			c.tree = tree
			if got := c.pickLocked(); got != want {
				t.Fatalf("n=%d step %d: tree picks %d, scan %d", n, step, got, want)
			}
		}
	}
}

// The random strategy's candidate set holds exactly the participants that
// are runnable and not spinning, through random state changes and spins,
// and its picks are among them and cover every one of them.
func TestRandomCandidatesMatchScan(t *testing.T) {
	strat, err := ParseStrategy("random")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 16, 256} {
		c := New(n, strat, 1, nil)
		rng := rand.New(rand.NewPCG(uint64(n), 9))
		seen := make([]bool, n)
		for step := 0; step < 20000; step++ {
			i := rng.IntN(n)
			if rng.IntN(2) == 0 {
				c.setState(i, state(rng.IntN(3)))
			} else {
				c.setSpinning(i, rng.IntN(2) == 0)
			}
			want := 0
			for j := 0; j < n; j++ {
				in := c.state[j] == runnable && !c.spinning[j]
				if in {
					want++
				}
				if got := c.pos[j] >= 0 && int(c.cand[c.pos[j]]) == j; got != in {
					t.Fatalf("n=%d step %d: participant %d in the set %v, want %v", n, step, j, got, in)
				}
			}
			if len(c.cand) != want {
				t.Fatalf("n=%d step %d: %d candidates, want %d", n, step, len(c.cand), want)
			}
			if p := c.pickLocked(); p >= 0 && want > 0 {
				if c.state[p] != runnable || c.spinning[p] {
					t.Fatalf("n=%d step %d: picked %d, which is not a candidate", n, step, p)
				}
				seen[p] = true
			}
		}
		for j, ok := range seen {
			if !ok {
				t.Errorf("n=%d: participant %d was never picked in 20000 steps", n, j)
			}
		}
	}
}
