package conductor

import (
	"sync"
	"testing"
	"time"
)

// A Stop before every participant has entered must not hang the ones
// that enter afterwards (it used to hand out a second turn token into a
// channel that still held the first).
func TestStopBeforeEveryoneEntered(t *testing.T) {
	st, err := ParseStrategy("random")
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 50; seed++ {
		c := New(3, st, seed, nil)
		c.Stop()
		var wg sync.WaitGroup
		for id := 0; id < 3; id++ {
			wg.Add(1)
			go func(id int) {
				defer wg.Done()
				c.Enter(id)
				c.Exit(id)
			}(id)
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("seed %d: participants entering after Stop hang", seed)
		}
	}
}
