package conductor

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
)

// Strategy names a scheduling strategy.
type Strategy struct {
	Kind  string // "time", "random", "pct"
	Depth int    // pct bug depth D
}

func (s Strategy) String() string {
	if s.Kind == "pct" {
		return fmt.Sprintf("pct:%d", s.Depth)
	}
	return s.Kind
}

// ParseStrategy parses "time", "random" or "pct:D".
func ParseStrategy(s string) (Strategy, error) {
	switch {
	case s == "time" || s == "random":
		return Strategy{Kind: s}, nil
	case strings.HasPrefix(s, "pct:"):
		d, err := strconv.Atoi(s[4:])
		if err != nil || d < 1 || d > 100 {
			return Strategy{}, fmt.Errorf("bad strategy %q: pct depth must be 1..100", s)
		}
		return Strategy{Kind: "pct", Depth: d}, nil
	}
	return Strategy{}, fmt.Errorf("unknown strategy %q (want time, random or pct:D)", s)
}

type state uint8

const (
	runnable state = iota
	blocked        // parked: not schedulable until Unblock
	exited
)

// Conductor serialises n participants.
type Conductor struct {
	strat Strategy
	rng   *rand.Rand
	clock func(id int) int64 // virtual clock of a paused participant (time strategy)
	// clocks, when set (SetClocks), are the participants' clock words,
	// read directly instead of through clock: the time strategy reads
	// every runnable participant's clock at every turn.
	clocks []*int64
	// tree is a tournament over the participants for the time strategy
	// with clocks (SetClocks) and for pct: leaf i is i while it is
	// runnable and not spinning, else -1; an inner node holds the winner
	// of its children (time: the smaller clock; pct: the higher priority;
	// the lower index on a tie), so tree[1] is the pick of the full scan
	// in O(1), kept up to date in O(log n) per change. Only the
	// participant holding the turn moves its clock (or has its pct
	// priority lowered), so a turn changes the leaves of the previous
	// holder and of the spinners it clears.
	tree []int32
	// keys[k] is the key of tree[k]'s winner (time: its clock; pct: its
	// negated priority) as read when node k was last fixed, so that a fix
	// compares two words rather than following two clock pointers. A
	// paused participant's key cannot go stale: only the turn's holder
	// moves its clock or has its priority lowered, and its leaf and path
	// are fixed when it passes the turn on (pickNextLocked).
	keys    []int64
	leaves  int
	spinIDs []int // participants with spinning set (cleared together)
	// cand, under the random strategy, holds the participants that are
	// runnable and not spinning, in no particular order; pos[i] is i's
	// index in it, or -1. A pick draws one index: O(1) per turn.
	cand []int32
	pos  []int32
	// treeStale: leaves changed while a participant held the turn (Stop,
	// from another goroutine), when the tree could not be fixed without
	// reading the running participant's clock; rebuilt at the next
	// handout, when everyone is paused.
	treeStale bool

	mu       sync.Mutex // guards everything below
	state    []state
	spinning []bool // yielded from a failed try: prefer others next
	turn     []chan struct{}
	running  int // id holding the turn, -1 none
	started  int
	prio     []int // pct priorities (higher runs first)
	changes  []uint64
	steps    uint64
	lowest   int
	stopped  bool
	// A virtual watchdog: if StallSteps turns pass without Progress
	// being called, OnStall runs once (with the conductor's lock held; it
	// must not call back into the conductor). Deterministic, unlike a
	// wall-clock watchdog, so a livelock replays to the same step.
	StallSteps uint64
	OnStall    func(steps uint64)
	lastMark   uint64
	stalled    bool
	// OnTurn, if set, is called by participant id's goroutine each time
	// it gets the turn back from another (the explanation replay's watch
	// learns which CPU runs). Set before the participants enter.
	OnTurn func(id int)
	// Steps counts turns handed out (the schedule's length).
}

// New returns a conductor for n participants. clock, if set, gives a
// paused participant's virtual clock (for the time strategy).
func New(n int, strat Strategy, seed uint64, clock func(int) int64) *Conductor {
	c := &Conductor{strat: strat, rng: rand.New(rand.NewPCG(seed, 0xc0dd)), clock: clock, running: -1}
	c.state = make([]state, n)
	c.spinning = make([]bool, n)
	c.turn = make([]chan struct{}, n)
	for i := range c.turn {
		c.turn[i] = make(chan struct{}, 1)
	}
	if strat.Kind == "pct" {
		c.prio = c.rng.Perm(n)
		for i := range c.prio {
			c.prio[i] += strat.Depth // change points lower below every initial priority
		}
		// D-1 change points within the first steps of the run
		for i := 0; i < strat.Depth-1; i++ {
			c.changes = append(c.changes, uint64(c.rng.IntN(1<<20)))
		}
		c.lowest = strat.Depth - 1
		c.buildTree()
	}
	if strat.Kind == "random" {
		c.cand, c.pos = make([]int32, n), make([]int32, n)
		for i := range c.cand {
			c.cand[i], c.pos[i] = int32(i), int32(i)
		}
	}
	return c
}

// Enter is called by participant id when its goroutine starts; it
// returns when the participant first gets the turn. The first turn is
// handed out once all n participants have entered.
func (c *Conductor) Enter(id int) {
	c.mu.Lock()
	c.started++
	if c.started == len(c.state) && c.running < 0 {
		// The first turn, unless a Stop before everyone entered already
		// handed one out: a second token would fill a turn channel that
		// still holds the first and block here for good.
		c.scheduleLocked()
	}
	ch := c.turn[id]
	c.mu.Unlock()
	<-ch
	if c.OnTurn != nil {
		c.OnTurn(id)
	}
}

// Yield hands the turn back; spin says the caller failed a try-lock.
func (c *Conductor) Yield(id int, spin bool) {
	c.mu.Lock()
	if !spin {
		// Progress (a lock taken or dropped, a step done): whoever was
		// spinning may now find what it waits for.
		for _, i := range c.spinIDs {
			c.setSpinning(i, false)
		}
		c.spinIDs = c.spinIDs[:0]
	}
	c.setSpinning(id, spin)
	c.passTurnLocked(id)
}

// passTurnLocked hands the turn to the next participant, releases the
// conductor's lock and waits until id has the turn again. When the pick
// is id itself (most turns of the time and pct strategies: a yield point
// that moved no clock past another's), id keeps the turn without a trip
// through its channel.
func (c *Conductor) passTurnLocked(id int) {
	if c.pickNextLocked() == id {
		c.mu.Unlock()
		return
	}
	c.handOutLocked()
	ch := c.turn[id]
	c.mu.Unlock()
	<-ch
	if c.OnTurn != nil {
		c.OnTurn(id)
	}
}

// Block parks participant id until Unblock(id) (or Stop); it returns
// when id gets the turn again.
func (c *Conductor) Block(id int) {
	c.mu.Lock()
	if !c.stopped {
		c.setState(id, blocked)
	}
	c.passTurnLocked(id)
}

// Unblock makes a parked participant runnable again (an IPI, the epoch
// advancing). Called by the running participant.
func (c *Conductor) Unblock(id int) {
	c.mu.Lock()
	if c.state[id] == blocked {
		c.setState(id, runnable)
	}
	c.mu.Unlock()
}

// Exit removes participant id for good and passes the turn on.
func (c *Conductor) Exit(id int) {
	c.mu.Lock()
	c.setState(id, exited)
	c.scheduleLocked()
	c.mu.Unlock()
}

// Stop makes every participant runnable (they are about to exit).
func (c *Conductor) Stop() {
	c.mu.Lock()
	c.stopped = true
	for i, s := range c.state {
		if s == blocked {
			// Not setState: its tree fix would read the clock of the
			// participant holding the turn while it runs.
			c.state[i] = runnable
			c.treeStale = true
		}
	}
	if c.running < 0 {
		// Nobody holds the turn (everyone left was parked): hand it out,
		// or the parked CPUs would never see the stop.
		c.scheduleLocked()
	}
	c.mu.Unlock()
}

// SetClocks gives the participants' clock words, read by the time
// strategy while their owners are paused (they are what clock returns).
// Call before the participants enter.
func (c *Conductor) SetClocks(p []*int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clocks = p
	if c.strat.Kind == "time" {
		c.buildTree()
	}
}

// buildTree makes the tournament tree (tree) over every participant.
func (c *Conductor) buildTree() {
	n := len(c.state)
	c.leaves = 1
	for c.leaves < n {
		c.leaves <<= 1
	}
	c.tree = make([]int32, 2*c.leaves)
	c.keys = make([]int64, 2*c.leaves)
	for i := range c.tree {
		c.tree[i] = -1
	}
	for i := 0; i < n; i++ {
		c.fixLocked(i)
	}
}

// keyOf returns participant i's tournament key: under the time strategy
// its clock, under pct its negated priority (the smaller key wins).
func (c *Conductor) keyOf(i int) int64 {
	if c.prio != nil {
		return -int64(c.prio[i])
	}
	return *c.clocks[i]
}

// fixLocked recomputes participant i's leaf and its path to the root:
// at each node the smaller key wins, the lower index on a tie, and -1
// (nobody) loses to anyone. It stops at the first node whose winner and
// key come out as they were: the nodes above it depend on nothing else
// that changed. Most turns end with the holder's leaf unchanged (a yield
// point that did not move its clock), and then nothing is recomputed.
func (c *Conductor) fixLocked(i int) {
	if c.cand != nil {
		c.fixCandLocked(i)
		return
	}
	if c.tree == nil {
		return
	}
	tree, keys := c.tree, c.keys
	k := c.leaves + i
	w, key := int32(-1), int64(0)
	if c.state[i] == runnable && !c.spinning[i] {
		w, key = int32(i), c.keyOf(i)
	}
	for {
		if tree[k] == w && (w < 0 || keys[k] == key) {
			return
		}
		tree[k], keys[k] = w, key
		if k == 1 {
			return
		}
		k >>= 1
		l, r := 2*k, 2*k+1
		a, b := tree[l], tree[r]
		if b < 0 || a >= 0 && keys[l] <= keys[r] { // a < b: the left child holds the lower indices
			w, key = a, keys[l]
		} else {
			w, key = b, keys[r]
		}
	}
}

// fixCandLocked puts participant i into the random strategy's candidate
// set or takes it out (swapping the last one into its place).
func (c *Conductor) fixCandLocked(i int) {
	in := c.state[i] == runnable && !c.spinning[i]
	switch p := c.pos[i]; {
	case in && p < 0:
		c.pos[i] = int32(len(c.cand))
		c.cand = append(c.cand, int32(i))
	case !in && p >= 0:
		last := c.cand[len(c.cand)-1]
		c.cand[p], c.pos[last] = last, p
		c.cand = c.cand[:len(c.cand)-1]
		c.pos[i] = -1
	}
}

// setSpinning sets participant i's spinning flag.
func (c *Conductor) setSpinning(i int, v bool) {
	if c.spinning[i] == v {
		return
	}
	c.spinning[i] = v
	if v {
		c.spinIDs = append(c.spinIDs, i)
	}
	c.fixLocked(i)
}

// setState sets participant i's state.
func (c *Conductor) setState(i int, s state) {
	c.state[i] = s
	c.fixLocked(i)
}

// clockOf returns participant i's virtual clock.
func (c *Conductor) clockOf(i int) int64 {
	if c.clocks != nil {
		return *c.clocks[i]
	}
	return c.clock(i)
}

// Progress tells the virtual watchdog that the machine moved on (an
// epoch completed).
func (c *Conductor) Progress() {
	c.mu.Lock()
	c.lastMark = c.steps
	c.mu.Unlock()
}

// Steps returns the number of turns handed out so far.
func (c *Conductor) Steps() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.steps
}

// scheduleLocked picks the next participant and hands it the turn.
func (c *Conductor) scheduleLocked() {
	c.pickNextLocked()
	c.handOutLocked()
}

// handOutLocked sends the turn to the participant pickNextLocked chose.
func (c *Conductor) handOutLocked() {
	if c.running >= 0 {
		c.turn[c.running] <- struct{}{}
	}
}

// pickNextLocked picks the next participant, makes it the holder of the
// turn and counts the turn; it returns the pick (-1: nobody).
func (c *Conductor) pickNextLocked() int {
	if c.treeStale {
		c.treeStale = false
		for i := range c.state {
			c.fixLocked(i)
		}
	} else if c.running >= 0 {
		c.fixLocked(c.running) // its clock moved during its turn
	}
	next := c.pickLocked()
	c.running = next
	if next < 0 {
		return next // everyone exited (or blocked: the machine is stuck; the watchdog will say so)
	}
	c.steps++
	if c.StallSteps > 0 && !c.stalled && c.steps-c.lastMark > c.StallSteps && c.OnStall != nil {
		c.stalled = true
		c.OnStall(c.steps)
	}
	return next
}

func (c *Conductor) pickLocked() int {
	n := len(c.state)
	if c.tree != nil && c.tree[1] >= 0 {
		return c.picked(int(c.tree[1])) // the scan below, kept as a tree
	}
	if len(c.cand) > 0 {
		return int(c.cand[c.rng.IntN(len(c.cand))]) // uniform among the candidates
	}
	// Prefer participants that are not spinning: whoever they wait for
	// must get to run. If every runnable one spins, take them in turn
	// (round robin), so that none is starved by the strategy's order.
	allSpin := true
	for i := 0; i < n; i++ {
		if c.state[i] == runnable && !c.spinning[i] {
			allSpin = false
			break
		}
	}
	if allSpin {
		for k := 1; k <= n; k++ {
			if i := (c.running + k + n) % n; c.state[i] == runnable {
				return i
			}
		}
		return -1
	}
	best := -1
	var bestKey int64
	kind := c.strat.Kind
	timed := kind == "time" && (c.clock != nil || c.clocks != nil)
	for i := 0; i < n; i++ {
		if c.state[i] != runnable || c.spinning[i] {
			continue
		}
		var key int64
		switch {
		case timed:
			key = c.clockOf(i)
		case kind == "pct":
			key = -int64(c.prio[i])
		}
		if best < 0 || key < bestKey {
			best, bestKey = i, key
		}
	}
	if best >= 0 {
		return c.picked(best)
	}
	return -1
}

// picked is pickLocked's choice of best: under pct, a change point at
// this step lowers its priority below every other (its leaf of the tree
// is fixed when it passes the turn on, as the time strategy's is for its
// clock).
func (c *Conductor) picked(best int) int {
	if c.strat.Kind == "pct" {
		for _, cp := range c.changes {
			if cp == c.steps {
				c.prio[best] = c.lowest
				c.lowest--
			}
		}
	}
	return best
}

// Hooks returns spinlock hooks that make every lock-layer yield point a
// turn change (spinlock.Hooks).
func (c *Conductor) Hooks() *Hooks { return &Hooks{c: c} }
