package relaxed

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestAddUint64 adds from several goroutines at once: no add is lost, and
// every returned value is taken once.
func TestAddUint64(t *testing.T) {
	const g, n = 4, 20000
	var ctr atomic.Uint64
	seen := make([][]uint64, g)
	var wg sync.WaitGroup
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				seen[i] = append(seen[i], AddUint64(&ctr, 1))
			}
		}()
	}
	wg.Wait()
	if got := ctr.Load(); got != g*n {
		t.Fatalf("counter %d after %d adds", got, g*n)
	}
	taken := make([]bool, g*n+1)
	for _, s := range seen {
		for _, v := range s {
			if v == 0 || v > g*n || taken[v] {
				t.Fatalf("value %d returned twice or out of range", v)
			}
			taken[v] = true
		}
	}
	if v := AddUint64(&ctr, 5); v != g*n+5 {
		t.Fatalf("AddUint64 by 5 returned %d, want %d", v, g*n+5)
	}
}
