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
