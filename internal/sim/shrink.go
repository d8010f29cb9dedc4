package sim

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/cpu"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/topology"
	"github.com/proxysim/proxysim/internal/workload"
)

// Size measures a scenario for shrinking.
type Size struct {
	CPUs    int `json:"cpus"`
	Tasks   int `json:"tasks"`
	Mutexes int `json:"mutexes"`
	Ops     int `json:"program_steps"`
}

func (s Size) String() string {
	return fmt.Sprintf("%d CPUs, %d tasks, %d mutexes, %d program steps", s.CPUs, s.Tasks, s.Mutexes, s.Ops)
}

// SizeOf measures sc on cpus CPUs.
func SizeOf(sc *workload.Scenario, cpus int) Size {
	z := Size{CPUs: cpus, Mutexes: len(sc.Mutexes)}
	for _, g := range sc.Groups {
		z.Tasks += g.Count
		z.Ops += len(g.Program)
	}
	return z
}

// The orders in which Shrink tries smaller machines (ShrinkOptions.Order).
const (
	// ShrinkJump tries a machine of at most JumpCPUs first, its tasks cut
	// in proportion, then smaller ones; only when that size does not fail
	// does it go back up, doubling, to the size of the recorded run.
	ShrinkJump = "jump"
	// ShrinkHalve halves the machine from the recorded size down, as long
	// as each half still fails.
	ShrinkHalve = "halve"
)

// JumpCPUs is the machine ShrinkJump tries first.
const JumpCPUs = 8

// DefaultShrinkStrategies are the deterministic strategies a candidate is
// explored with, after the strategy it last failed with.
var DefaultShrinkStrategies = []string{"random", "pct:3", "time"}

// ShrinkOptions tune Shrink.
type ShrinkOptions struct {
	// MaxTries bounds the candidate runs (0: no bound).
	MaxTries int
	// Budget bounds the wall time of the shrink (0: none), counted from
	// Start (zero: when Shrink is called). When it is spent the running
	// candidates are stopped and the smallest failing scenario so far is
	// the result; it keeps time for the caller to run that once more.
	Budget time.Duration
	Start  time.Time
	// Seeds is how many seeds a candidate is tried on per strategy: the
	// seed it last failed on, then the next ones (1 or less: that one
	// only). A candidate smaller machine is tried on MachineSeeds times
	// as many. A deterministic interleaving hangs on every detail of the
	// scenario, so a smaller scenario rarely fails on the very same seed
	// and strategy; it often does on a neighbour, or with another
	// strategy.
	Seeds int
	// Strategies are the deterministic strategies a candidate is tried
	// with, after the one it last failed with (nil:
	// DefaultShrinkStrategies).
	Strategies []string
	// Order is ShrinkJump (""), or ShrinkHalve.
	Order string
	// Progress, if set, is told of every kept change.
	Progress func(Size, string)
	// Workers is how many of a candidate's runs go at once (0:
	// GOMAXPROCS). The result does not depend on it.
	Workers int
	// Stop, when closed, ends the shrink at once with the smallest
	// failing scenario found so far.
	Stop <-chan struct{}
}

// MachineSeeds multiplies ShrinkOptions.Seeds for a candidate machine of
// a smaller size: the biggest cut there is, and the one whose schedules
// differ the most from the recorded run's.
const MachineSeeds = 4

// ShrinkResult is the smallest failing scenario found.
type ShrinkResult struct {
	Scenario *workload.Scenario
	// Options are the options it fails with: Seed, Strategy, the stress
	// injectors the shrink turned off, and SimTime just past the failure.
	Options Options
	Seed    uint64 // Options.Seed
	Tries   int    // candidate runs
	// Interrupted: Stop was closed. BudgetSpent: the Budget ran out.
	Interrupted bool
	BudgetSpent bool
	// Violation is the first violation of the shrunk run, First that of
	// the recorded one; At and FirstAt the virtual time each run had
	// reached when it stopped there (a violation the barrier's audit
	// finds may carry no time of its own).
	Violation, First check.Violation
	At, FirstAt      time.Duration
}

// An Injector is a stress option a shrink may turn off: it is an option
// of the run, not of the scenario, so the shrunk case's command says it.
type Injector struct {
	Flag  string // the stress flag that sets it
	on    func(o *Options) bool
	off   func(o *Options)
	value func(o *Options) string
}

// Value is the flag's value in o.
func (in Injector) Value(o *Options) string { return in.value(o) }

func durationValue(d time.Duration) string { return d.String() }

func floatValue(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Injectors are the stress injectors Shrink turns off, in the order it
// tries them.
var Injectors = []Injector{
	{"signal-rate", func(o *Options) bool { return o.SignalRate > 0 }, func(o *Options) { o.SignalRate = 0 },
		func(o *Options) string { return floatValue(o.SignalRate) }},
	{"spurious-wake-rate", func(o *Options) bool { return o.SpuriousWakeRate > 0 }, func(o *Options) { o.SpuriousWakeRate = 0 },
		func(o *Options) string { return floatValue(o.SpuriousWakeRate) }},
	{"hotplug-interval", func(o *Options) bool { return o.HotplugInterval > 0 }, func(o *Options) { o.HotplugInterval, o.HotplugIsDefault = 0, false },
		func(o *Options) string { return durationValue(o.HotplugInterval) }},
	{"shuffle-interval", func(o *Options) bool { return o.ShuffleInterval > 0 }, func(o *Options) { o.ShuffleInterval = 0 },
		func(o *Options) string { return durationValue(o.ShuffleInterval) }},
	{"migrate-disable", func(o *Options) bool { return o.MigrateDisable > 0 }, func(o *Options) { o.MigrateDisable = 0 },
		func(o *Options) string { return floatValue(o.MigrateDisable) }},
	{"lock-interruptible", func(o *Options) bool { return o.InterruptibleLocks > 0 }, func(o *Options) { o.InterruptibleLocks = 0 },
		func(o *Options) string { return floatValue(o.InterruptibleLocks) }},
	{"core-sched-toggle-interval", func(o *Options) bool { return o.CoreToggleInterval > 0 }, func(o *Options) { o.CoreToggleInterval = 0 },
		func(o *Options) string { return durationValue(o.CoreToggleInterval) }},
	// srq-drain-irqs-on's set-up (SRQDrainSetup) turns the toggle back on:
	// the command line cannot say it is off.
	{"srq-toggle-interval", func(o *Options) bool { return o.SRQToggleInterval > 0 && !o.Bugs.Has(bugs.SRQDrainIRQsOn) },
		func(o *Options) { o.SRQToggleInterval = 0 }, func(o *Options) string { return durationValue(o.SRQToggleInterval) }},
	{"domain-rebuild-interval", func(o *Options) bool { return o.DomainRebuildInterval > 0 }, func(o *Options) { o.DomainRebuildInterval = 0 },
		func(o *Options) string { return durationValue(o.DomainRebuildInterval) }},
}

// Shrink reduces a failing deterministic run (o, sc) to a smaller case
// that still fails with the same invariant. The cuts come biggest first:
// a smaller machine with its tasks, mutexes and ww_mutexes cut in
// proportion (in Order); then, in rounds until a round keeps nothing,
// the stress injectors (options of the run: the result's Options say
// which are off), whole task groups (half of them at once first), tasks
// (every group halved at once first, then group by group), and the
// machine again (halved with its tasks, then alone); a round that keeps
// nothing is tried again on new seeds, twice as many, MaxWiden times.
// Then the small cuts: mutexes, ww classes and ww_mutexes nothing needs,
// random choices and durations made fixed, code no task reaches, and
// last single program steps; if one of them kept something, the big cuts
// come round again.
//
// Each candidate is a small exploration: deterministic runs on the seed
// and strategy the current case fails with, then the next seeds with
// each of the Strategies (interleaved: seed s with every strategy, then
// s+1, ...); the first that breaks the invariant in that order is kept,
// and its seed and strategy become the current ones. A candidate run
// counts as not failing past the bounds of limit and turns: counted
// bounds, so that the result does not depend on the host's speed (only
// where Budget cuts it short).
func Shrink(o Options, sc *workload.Scenario, invariant string, so ShrinkOptions) (ShrinkResult, error) {
	o.Deterministic = true
	o.Duration = 0
	cpus := o.CPUs
	if sc.CPUs > 0 {
		cpus = sc.CPUs
	}
	cur := clone(sc)
	cur.CPUs = cpus
	if cur.Topology == "" {
		cur.Topology = o.Topology // the shrunk scenario keeps the machine's shape
	}
	if cur.Topology == "" {
		cur.Topology = topology.Default(cpus).String()
	}
	s := &shrinker{
		invariant: invariant, so: so, cur: cand{cur, o}, widthMul: 1,
		quit: make(chan struct{}), strategies: shrinkStrategies(so.Strategies),
	}
	s.workers = so.Workers
	if s.workers <= 0 {
		s.workers = runtime.GOMAXPROCS(0)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-so.Stop:
			s.end()
		case <-done:
		}
	}()
	// The recorded run is run whole, whatever the budget: without it
	// there is no failing case to keep. The budget counts its time.
	start := so.Start
	if start.IsZero() {
		start = time.Now()
	}
	s.tries++
	first := s.runOn(s.cur, variant{strategy: o.Strategy, seed: o.Seed}, nil, bounds{sim: o.SimTime})
	s.reserve.Store(int64(first.wall))
	if so.Budget > 0 {
		go s.watchBudget(start, done)
	}
	if !first.failed {
		if s.stopped() {
			return s.result(), nil
		}
		return ShrinkResult{Tries: s.tries}, fmt.Errorf("the run does not fail with %s to begin with", invariant)
	}
	s.first, s.curRun = first, first
	s.simLimit = first.at + 100*time.Millisecond
	s.machine()
	s.cut = true
	for !s.out() {
		// The big cuts until they stop helping; a round of them that
		// helps nowhere is tried again on new seeds, twice as many each
		// time, MaxWiden times.
		for !s.out() {
			changed := s.injectors()
			changed = s.groups() || changed
			changed = s.tasks() || changed
			changed = s.cpus() || changed
			if !changed && !s.widen() {
				break
			}
		}
		s.narrow()
		changed := s.objects()
		changed = s.choices() || changed
		changed = s.steps() || changed
		if !changed {
			break
		}
	}
	return s.result(), nil
}

// MaxWiden is how many times Shrink tries the big cuts again on new
// seeds when a round of them kept nothing.
const MaxWiden = 2

// widen makes the next candidates try new seeds, twice as many as the
// last round (false after MaxWiden times since the last kept change).
func (s *shrinker) widen() bool {
	if s.widened >= MaxWiden || s.out() {
		return false
	}
	s.widened++
	s.seedOffset += uint64(s.so.Seeds * s.widthMul)
	s.widthMul *= 2
	return true
}

// narrow goes back to the seeds of a candidate's own width.
func (s *shrinker) narrow() { s.widened, s.seedOffset, s.widthMul = 0, 0, 1 }

type shrinker struct {
	cut bool // the machine pass is over
	// widthMul multiplies the seeds of a candidate, which start
	// seedOffset after the current case's (widen).
	widthMul   int
	seedOffset uint64
	widened    int
	invariant  string
	so         ShrinkOptions
	strategies []string
	workers    int
	cur        cand      // the smallest failing case so far
	curRun     runResult // its failing run
	first      runResult // the recorded run
	tries      int
	simLimit   time.Duration // virtual time a candidate run may take in the machine pass
	quit       chan struct{} // closed on Stop or when the budget is spent
	quitOnce   sync.Once
	// budgetSpent is set by watchBudget and read when the shrink
	// returns; reserve is the wall time of the current case's failing
	// run, which the caller's check of the result will take again.
	budgetSpent atomic.Bool
	reserve     atomic.Int64
}

// bounds limit a candidate run: its sim time and conductor turns (0:
// none).
type bounds struct {
	sim   time.Duration
	turns uint64
}

func (s *shrinker) bounds() bounds { return bounds{s.limit(), s.turns()} }

// of is b for variant v.
func (b bounds) of(v variant) bounds {
	if v.sim > 0 {
		b.sim = v.sim
	}
	return b
}

// ShortRun is the sim time of the first half of a smaller machine's
// runs, when the recorded failure came later: a smaller machine is a new
// schedule, many fail early, and short runs on more seeds find one
// sooner; the second half runs as long as the recorded failure took,
// plus 100ms, for the failures that need that long (a liveness bound).
const ShortRun = 100 * time.Millisecond

// limit is the virtual time a candidate run may take before it counts
// as not failing: in the machine pass the recorded failure's plus 100ms
// (a smaller machine is a new schedule, whose failure may come later),
// then four times the current case's (at least 20ms, at most the
// machine pass's bound): a cut does not make a failure much later, and
// short runs on more seeds find a failure sooner than long ones on few.
func (s *shrinker) limit() time.Duration {
	if s.cut {
		return min(s.simLimit, max(4*s.curRun.at, 20*time.Millisecond))
	}
	return s.simLimit
}

// turns is the conductor turns a candidate run may take before it
// counts as not failing: four times the current case's failing run's,
// plus a million (a bound for runs that spin without moving virtual
// time on).
func (s *shrinker) turns() uint64 { return 4*s.curRun.steps + 1_000_000 }

// abandonGrace is how long a candidate run may take to end once the
// shrink has stopped before it is left behind.
const abandonGrace = time.Second

// budgetSlack is the wall time a shrink keeps from its budget for the
// candidate runs in flight to stop and the result to be written.
const budgetSlack = 300 * time.Millisecond

// watchBudget ends the shrink when what is left of the budget would no
// longer pay for running the smallest failing case once more.
func (s *shrinker) watchBudget(start time.Time, done <-chan struct{}) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-s.quit:
			return
		case <-t.C:
			// twice the case's run: the caller's check of the result
			// may run on a host as loaded as the shrink's was; and the
			// grace a blocked run is given before it is left behind
			if time.Since(start)+2*time.Duration(s.reserve.Load())+budgetSlack+abandonGrace >= s.so.Budget {
				s.budgetSpent.Store(true)
				s.end()
				return
			}
		}
	}
}

// cand is a case: a scenario (its CPUs and Topology set) and the options
// of its run (Seed, Strategy, injectors).
type cand struct {
	sc *workload.Scenario
	o  Options
}

// variant is one run of a candidate.
type variant struct {
	strategy string
	seed     uint64
	sim      time.Duration // its sim time, when not the pass's (0)
}

func (s *shrinker) end() { s.quitOnce.Do(func() { close(s.quit) }) }

func (s *shrinker) stopped() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// out says the shrink must end: stopped, budget spent or tries used up.
func (s *shrinker) out() bool {
	return s.stopped() || (s.so.MaxTries > 0 && s.tries >= s.so.MaxTries)
}

func (s *shrinker) result() ShrinkResult {
	o := s.cur.o
	if s.curRun.failed {
		// just past the failure, in whole milliseconds: a run's prefix
		// does not depend on its sim time
		o.SimTime = s.curRun.at/time.Millisecond*time.Millisecond + 2*time.Millisecond
	}
	interrupted := false
	select {
	case <-s.so.Stop:
		interrupted = true
	default:
	}
	return ShrinkResult{Scenario: s.cur.sc, Options: o, Seed: o.Seed, Tries: s.tries, Interrupted: interrupted,
		BudgetSpent: s.budgetSpent.Load(), Violation: s.curRun.v, First: s.first.v, At: s.curRun.at, FirstAt: s.first.at}
}

func shrinkStrategies(list []string) []string {
	if len(list) == 0 {
		list = DefaultShrinkStrategies
	}
	return slices.Clone(list)
}

type runResult struct {
	failed bool
	v      check.Violation
	at     time.Duration // the virtual time the run reached
	steps  uint64        // its conductor turns
	wall   time.Duration // and its wall time
}

const budgetStop = "shrink: turn budget spent"

// runOn runs candidate c once, until it fails, its sim time or turn
// budget is spent, or the shrink or cancel stops it.
func (s *shrinker) runOn(c cand, v variant, cancel <-chan struct{}, b bounds) runResult {
	oo := c.o
	oo.CPUs, oo.Topology, oo.Seed, oo.Strategy, oo.SimTime = c.sc.CPUs, c.sc.Topology, v.seed, v.strategy, b.sim
	// The shrink's end and a decided earlier run stop this one from its
	// own epoch hook, in the conductor's turn: a deterministic run
	// stopped from outside while a CPU waits for its turn inside the
	// epoch barrier's lock can hang (see the core-fi-vruntime shrink).
	var halt atomic.Pointer[string]
	lim := b.turns
	prev := oo.OnEpoch
	oo.OnEpoch = func(m *cpu.Machine, h int64) {
		if why := halt.Load(); why != nil {
			m.Stop(*why)
		} else if lim > 0 && m.ScheduleSteps() > lim {
			m.Stop(budgetStop)
		}
		if prev != nil {
			prev(m, h)
		}
	}
	r, err := Build(oo, clone(c.sc)) // Plan reads the scenario; each run its own copy
	if err != nil {
		return runResult{}
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		why := ""
		select {
		case <-s.quit:
			why = "shrink ended"
		case <-cancel:
			why = "shrink: an earlier run decided"
		case <-done:
			return
		}
		halt.Store(&why)
	}()
	start := time.Now()
	ran := make(chan *Summary, 1)
	go func() { ran <- r.Execute() }()
	var sum *Summary
	select {
	case sum = <-ran:
	case <-s.quit:
		// A run that does not end within abandonGrace of the stop is
		// left behind (its goroutines with it) and counts as not
		// failing: some candidate runs block for good inside the model
		// (core-fi-vruntime's shrink: CPUs waiting in SchedCoreLock with
		// no conductor turn to pass), and the budget must hold anyway.
		select {
		case sum = <-ran:
		case <-time.After(abandonGrace):
			return runResult{}
		}
	}
	res := runResult{steps: sum.ScheduleSteps, at: time.Duration(sum.SimTimeNs), wall: time.Since(start)}
	if sum.Failed() && sum.Violations[0].Name == s.invariant && !s.stopped() && r.Machine.StopReason() != budgetStop {
		res.failed, res.v, res.at = true, sum.Violations[0], sum.FailedAt()
	}
	return res
}

// variants lists the runs of one candidate: the current seed and
// strategy first, then seed by seed every strategy.
func (s *shrinker) variants(seeds int) []variant {
	seeds = max(1, seeds)
	sts := []string{s.cur.o.Strategy}
	for _, st := range s.strategies {
		if !slices.Contains(sts, st) {
			sts = append(sts, st)
		}
	}
	seeds *= max(1, s.widthMul)
	out := make([]variant, 0, seeds*len(sts))
	for k := 0; k < seeds; k++ {
		for _, st := range sts {
			out = append(out, variant{strategy: st, seed: s.cur.o.Seed + s.seedOffset + uint64(k)})
		}
	}
	return out
}

// try keeps candidate c if one of its runs on seeds seeds per strategy
// fails with the invariant.
func (s *shrinker) try(c cand, seeds int, what string) bool {
	return s.tryVariants(c, s.variants(seeds), what)
}

// tryVariants keeps candidate c if one of the runs vs fails with the
// invariant.
func (s *shrinker) tryVariants(c cand, vs []variant, what string) bool {
	if s.out() || !valid(c) {
		return false
	}
	v, r, ok := s.explore(c, vs)
	if !ok {
		return false
	}
	c.o.Seed, c.o.Strategy = v.seed, v.strategy
	s.cur, s.curRun = c, r
	s.narrow()
	s.reserve.Store(int64(r.wall))
	if s.so.Progress != nil {
		s.so.Progress(SizeOf(c.sc, c.sc.CPUs), fmt.Sprintf("%s [%s, seed %d]", what, v.strategy, v.seed))
	}
	return true
}

// explore runs c's variants in order and returns the first that fails.
// With workers > 1 the runs go side by side (a deterministic run uses
// one goroutine at a time, so one core): a candidate that fails on none,
// most of them, costs the time of len(vs)/workers runs. The answer and
// the tries counted are those of running the variants one by one:
// results are read in order, a try is counted only where the sequential
// loop would have run it, and later runs are stopped once an earlier one
// decided.
func (s *shrinker) explore(c cand, vs []variant) (variant, runResult, bool) {
	n := len(vs)
	if s.workers == 1 || n == 1 {
		for _, v := range vs {
			if s.out() {
				break
			}
			s.tries++
			if r := s.runOn(c, v, nil, s.bounds().of(v)); r.failed {
				return v, r, true
			}
		}
		return variant{}, runResult{}, false
	}
	cancel := make(chan struct{})
	b := s.bounds()
	results := make([]chan runResult, n)
	for k := range results {
		results[k] = make(chan runResult, 1)
	}
	go func() { // dispatch in order, at most workers at once
		sem := make(chan struct{}, s.workers)
		for k := 0; k < n; k++ {
			select {
			case sem <- struct{}{}:
			case <-cancel:
				for ; k < n; k++ {
					results[k] <- runResult{}
				}
				return
			}
			go func(k int) {
				results[k] <- s.runOn(c, vs[k], cancel, b.of(vs[k]))
				<-sem
			}(k)
		}
	}()
	next := 0 // results read so far
	defer func() {
		close(cancel)
		for ; next < n; next++ {
			<-results[next] // every run dispatched has ended
		}
	}()
	for next < n {
		if s.out() {
			break
		}
		s.tries++
		k := next
		next++
		if r := <-results[k]; r.failed {
			return vs[k], r, true
		}
	}
	return variant{}, runResult{}, false
}

// valid says whether c can be built at all (a candidate that cannot is
// no try).
func valid(c cand) bool {
	if c.sc.Check() != nil {
		return false
	}
	tp, err := topology.Parse(c.sc.Topology)
	if err != nil || tp.NumCPUs() != c.sc.CPUs {
		return false
	}
	if _, err = clone(c.sc).Plan(c.sc.CPUs, c.o.Seed); err != nil {
		return false
	}
	// what the bugs switched on need must still be there (ww_mutexes in
	// the scenario, an injector the shrink has not turned off): the
	// command that runs the shrunk case would be refused otherwise
	o := c.o
	_, err = EnableBugNeeds(&o, c.sc, NeedsOff{Hotplug: o.HotplugInterval <= 0, CoreFlips: o.CoreToggleInterval <= 0,
		TaskExits: o.SignalRate <= 0 || o.SignalFatal <= 0, SRQToggles: o.SRQToggleInterval <= 0})
	return err == nil
}

// machine tries smaller machines, each with its tasks, mutexes and
// ww_mutexes cut in proportion (scaled).
func (s *shrinker) machine() {
	chain := halvings(s.cur.sc.Topology)
	try := func(tp *topology.Topology) bool {
		// the most seeds where runs are cheapest
		seeds := s.so.Seeds * max(1, MachineSeeds*JumpCPUs/tp.NumCPUs())
		c := cand{scaled(s.cur.sc, tp), s.cur.o}
		vs := s.variants(seeds)
		if s.simLimit > ShortRun {
			for k := range vs[:len(vs)/2] {
				vs[k].sim = ShortRun
			}
		}
		return s.tryVariants(c, vs, fmt.Sprintf("machine -> %s, tasks in proportion", tp))
	}
	if s.so.Order == ShrinkHalve {
		for _, tp := range chain {
			if !try(tp) {
				return
			}
		}
		return
	}
	j := slices.IndexFunc(chain, func(tp *topology.Topology) bool { return tp.NumCPUs() <= JumpCPUs })
	if j < 0 {
		j = len(chain)
	}
	kept := false
	for i := j; i < len(chain) && try(chain[i]); i++ {
		kept = true
	}
	if kept {
		return
	}
	for i := j - 1; i >= 0; i-- {
		if try(chain[i]) {
			return
		}
	}
}

// halvings is the chain of machines from half of topo down to one CPU,
// each half the one before: sockets first, then LLCs, then cores, SMT
// threads last, so that siblings (core scheduling) and a shared LLC
// (SHARED_RUNQ) stay as long as the machine has room for them.
func halvings(topo string) []*topology.Topology {
	tp, err := topology.Parse(topo)
	if err != nil {
		return nil
	}
	var out []*topology.Topology
	for {
		v := []int{tp.Sockets, tp.LLCsPerSocket, tp.CoresPerLLC, tp.ThreadsPerCore}
		k := slices.IndexFunc(v, func(n int) bool { return n > 1 })
		if k < 0 {
			return out
		}
		v[k] /= 2
		if tp, err = topology.New(v[0], v[1], v[2], v[3]); err != nil {
			return out
		}
		out = append(out, tp)
	}
}

// scaled is sc on machine tp with each group's count cut in proportion to
// the CPUs (rounded up), and the mutexes and ww_mutexes tasks draw at
// random likewise, but never below what a group draws.
func scaled(sc *workload.Scenario, tp *topology.Topology) *workload.Scenario {
	c := clone(sc)
	n, from := tp.NumCPUs(), sc.CPUs
	c.CPUs, c.Topology = n, tp.String()
	part := func(k int) int { return max(1, (k*n+from-1)/from) }
	for i := range c.Groups {
		c.Groups[i].Count = part(c.Groups[i].Count)
	}
	if u := mutexUse(c); u.pool && !fixedWW(c) {
		c.Mutexes = c.Mutexes[:min(len(c.Mutexes), max(part(len(c.Mutexes)), u.least))]
	}
	if !fixedWW(c) {
		for k := range c.WW {
			c.WW[k].Count = min(c.WW[k].Count, max(part(c.WW[k].Count), wwSlots(c, k)))
		}
	}
	return c
}

// groups removes whole groups, with the instructions of other groups
// that target them.
func (s *shrinker) groups() bool {
	changed := false
	// half of them at once first, when there are four or more
	if n := len(s.cur.sc.Groups); n >= 4 {
		for _, part := range [][2]int{{n / 2, n}, {0, n / 2}} {
			c := s.cur
			c.sc = s.cur.sc
			for gi := part[1] - 1; gi >= part[0] && c.sc != nil; gi-- {
				c.sc = withoutGroup(c.sc, gi)
			}
			if c.sc != nil && s.try(c, s.so.Seeds, fmt.Sprintf("groups %d-%d removed", part[0], part[1]-1)) {
				changed = true
				break
			}
		}
	}
	for gi := len(s.cur.sc.Groups) - 1; gi >= 0 && len(s.cur.sc.Groups) > 1; gi-- {
		if gi >= len(s.cur.sc.Groups) {
			continue
		}
		c := s.cur
		c.sc = withoutGroup(s.cur.sc, gi)
		if c.sc != nil && s.try(c, s.so.Seeds, fmt.Sprintf("group %s removed", s.cur.sc.Groups[gi].Name)) {
			changed = true
		}
	}
	return changed
}

// withoutGroup is sc less group gi and the instructions that target it
// (nil if a program would be left empty).
func withoutGroup(sc *workload.Scenario, gi int) *workload.Scenario {
	c := clone(sc)
	c.Groups = slices.Delete(c.Groups, gi, gi+1)
	for k := range c.Groups {
		g := &c.Groups[k]
		for j := len(g.Program) - 1; j >= 0; j-- {
			if g.Program[j].TargetGroup == gi {
				if len(g.Program) == 1 {
					return nil
				}
				g.Program = dropOp(g.Program, j)
			}
		}
		for j := range g.Program {
			if tg := g.Program[j].TargetGroup; tg > gi {
				g.Program[j].TargetGroup = tg - 1
			}
		}
	}
	return c
}

// tasks halves each group's count, largest group first, then takes one
// task away.
func (s *shrinker) tasks() bool {
	changed := false
	// every group halved at once first
	if c := s.cur; s.cur.sc.NumTasks() > 2*len(s.cur.sc.Groups) {
		c.sc = clone(s.cur.sc)
		for i := range c.sc.Groups {
			c.sc.Groups[i].Count = max(1, c.sc.Groups[i].Count/2)
		}
		changed = s.try(c, s.so.Seeds, fmt.Sprintf("every group halved (%d tasks)", c.sc.NumTasks()))
	}
	order := make([]int, len(s.cur.sc.Groups))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return s.cur.sc.Groups[b].Count - s.cur.sc.Groups[a].Count })
	for _, gi := range order {
		for s.cur.sc.Groups[gi].Count > 1 && !s.out() {
			name := s.cur.sc.Groups[gi].Name
			c := s.cur
			c.sc = clone(s.cur.sc)
			c.sc.Groups[gi].Count /= 2
			if !s.try(c, s.so.Seeds, fmt.Sprintf("%s count -> %d", name, c.sc.Groups[gi].Count)) {
				if s.cur.sc.Groups[gi].Count == 2 {
					break // the half was one less
				}
				c.sc = clone(s.cur.sc)
				c.sc.Groups[gi].Count--
				if !s.try(c, s.so.Seeds, fmt.Sprintf("%s count -> %d", name, c.sc.Groups[gi].Count)) {
					break
				}
			}
			changed = true
		}
	}
	return changed
}

// cpus halves the machine keeping the tasks, then takes one CPU away.
func (s *shrinker) cpus() bool {
	changed := false
	for !s.out() {
		chain := halvings(s.cur.sc.Topology)
		if len(chain) == 0 {
			break
		}
		c := s.cur
		c.sc = scaled(s.cur.sc, chain[0])
		if s.cur.sc.NumTasks() > len(s.cur.sc.Groups) && s.try(c, s.so.Seeds, fmt.Sprintf("machine -> %s, tasks in proportion", chain[0])) {
			changed = true
			continue
		}
		c.sc = clone(s.cur.sc)
		c.sc.CPUs, c.sc.Topology = chain[0].NumCPUs(), chain[0].String()
		if !s.try(c, s.so.Seeds, fmt.Sprintf("machine -> %s", chain[0])) {
			break
		}
		changed = true
	}
	if n := s.cur.sc.CPUs - 1; n >= 1 && n != s.cur.sc.CPUs/2 {
		c := s.cur
		c.sc = clone(s.cur.sc)
		c.sc.CPUs, c.sc.Topology = n, topology.Default(n).String()
		if s.try(c, s.so.Seeds, fmt.Sprintf("machine -> %s", c.sc.Topology)) {
			changed = true
		}
	}
	return changed
}

// injectors turns the stress injectors off one by one.
func (s *shrinker) injectors() bool {
	changed := false
	for _, in := range Injectors {
		if !in.on(&s.cur.o) {
			continue
		}
		c := s.cur
		in.off(&c.o)
		if s.try(c, s.so.Seeds, fmt.Sprintf("--%s %s", in.Flag, in.value(&c.o))) {
			changed = true
		}
	}
	return changed
}

// mutexUsage is what a scenario's programs need of its plain mutexes.
type mutexUsage struct {
	pool  bool   // some task draws from all of them (slots, $self, index ranges)
	least int    // the fewest the programs and slot counts allow
	used  []bool // with no pool: the mutexes named
}

func mutexUse(sc *workload.Scenario) mutexUsage {
	u := mutexUsage{used: make([]bool, len(sc.Mutexes))}
	for _, g := range sc.Groups {
		u.pool = u.pool || g.Slots > 0
		u.least = max(u.least, g.Slots)
		for _, op := range g.Program {
			if op.Kind != task.OpLock && op.Kind != task.OpUnlock {
				continue
			}
			switch op.MutexMode {
			case workload.MutexFixed:
				if op.Mutex < len(u.used) {
					u.used[op.Mutex] = true
				}
				u.least = max(u.least, op.Mutex+1)
			case workload.MutexSlot:
			default: // $self, index ranges: all of them
				u.pool, u.least = true, len(sc.Mutexes)
			}
		}
	}
	return u
}

// fixedWW says whether a program names a ww_mutex by its index, which
// moves with every mutex before it.
func fixedWW(sc *workload.Scenario) bool {
	for _, g := range sc.Groups {
		for _, op := range g.Program {
			if (op.Kind == task.OpWWLock || op.Kind == task.OpWWUnlock) && op.MutexMode == workload.MutexFixed {
				return true
			}
		}
	}
	return false
}

// wwSlots is the most ww_mutexes a group draws from ww set k.
func wwSlots(sc *workload.Scenario, k int) int {
	n := 0
	for _, g := range sc.Groups {
		if g.WWSet == k {
			n = max(n, g.WWSlots)
		}
	}
	return n
}

// wwUsed says whether a group uses ww set k.
func wwUsed(sc *workload.Scenario, k int) bool {
	for _, g := range sc.Groups {
		if g.WWSet != k {
			continue
		}
		if g.WWSlots > 0 {
			return true
		}
		for _, op := range g.Program {
			if op.Kind == task.OpWWInit {
				return true
			}
		}
	}
	return false
}

// objects removes what nothing uses any more, then halves the mutexes
// and ww_mutexes tasks draw from: mutexes no program names (with no
// group drawing slots), ww classes no group opens, and pools cut down to
// what the groups draw.
func (s *shrinker) objects() bool {
	changed := false
	if u := mutexUse(s.cur.sc); !u.pool && !fixedWW(s.cur.sc) && slices.Contains(u.used, false) {
		c := s.cur
		c.sc = withMutexes(s.cur.sc, u.used)
		if s.try(c, s.so.Seeds, fmt.Sprintf("unused mutexes removed (%d left)", len(c.sc.Mutexes))) {
			changed = true
		}
	}
	for k := len(s.cur.sc.WW) - 1; k >= 0 && !fixedWW(s.cur.sc); k-- {
		if wwUsed(s.cur.sc, k) {
			continue
		}
		c := s.cur
		c.sc = clone(s.cur.sc)
		name := c.sc.WW[k].Name
		c.sc.WW = slices.Delete(c.sc.WW, k, k+1)
		for gi := range c.sc.Groups {
			if g := &c.sc.Groups[gi]; g.WWSet > k {
				g.WWSet--
			} else if g.WWSet == k {
				g.WWSet, g.WWSlots = 0, 0
			}
		}
		if s.try(c, s.so.Seeds, fmt.Sprintf("ww class %s removed", name)) {
			changed = true
		}
	}
	// the pools, halving, then one at a time
	for !s.out() {
		u := mutexUse(s.cur.sc)
		n := len(s.cur.sc.Mutexes)
		if !u.pool || n <= max(u.least, 1) || fixedWW(s.cur.sc) {
			break
		}
		c := s.cur
		c.sc = clone(s.cur.sc)
		c.sc.Mutexes = c.sc.Mutexes[:max(n/2, u.least, 1)]
		if !s.try(c, s.so.Seeds, fmt.Sprintf("mutexes -> %d", len(c.sc.Mutexes))) {
			if len(c.sc.Mutexes) == n-1 {
				break
			}
			c.sc = clone(s.cur.sc)
			c.sc.Mutexes = c.sc.Mutexes[:n-1]
			if !s.try(c, s.so.Seeds, fmt.Sprintf("mutexes -> %d", n-1)) {
				break
			}
		}
		changed = true
	}
	for k := range s.cur.sc.WW {
		for !s.out() && !fixedWW(s.cur.sc) {
			n, least := s.cur.sc.WW[k].Count, max(wwSlots(s.cur.sc, k), 1)
			if n <= least {
				break
			}
			c := s.cur
			c.sc = clone(s.cur.sc)
			c.sc.WW[k].Count = max(n/2, least)
			if !s.try(c, s.so.Seeds, fmt.Sprintf("ww class %s: %d ww_mutexes", c.sc.WW[k].Name, c.sc.WW[k].Count)) {
				break
			}
			changed = true
		}
	}
	return changed
}

// withMutexes keeps the mutexes keep says, renumbering the programs'
// references (ww_mutexes come after the plain ones: none is named by
// index, fixedWW).
func withMutexes(sc *workload.Scenario, keep []bool) *workload.Scenario {
	c := clone(sc)
	idx := make([]int, len(keep))
	c.Mutexes = c.Mutexes[:0]
	for i, k := range keep {
		idx[i] = len(c.Mutexes)
		if k {
			c.Mutexes = append(c.Mutexes, sc.Mutexes[i])
		}
	}
	for gi := range c.Groups {
		for j := range c.Groups[gi].Program {
			op := &c.Groups[gi].Program[j]
			if (op.Kind == task.OpLock || op.Kind == task.OpUnlock) && op.MutexMode == workload.MutexFixed && op.Mutex < len(idx) {
				op.Mutex = idx[op.Mutex]
			}
		}
	}
	return c
}

// choices makes random choices and durations fixed: a choose that jumps
// always or never (its likelier outcome first), a duration at its
// shortest.
func (s *shrinker) choices() bool {
	changed := false
	for gi := range s.cur.sc.Groups {
		for j := range s.cur.sc.Groups[gi].Program {
			op := s.cur.sc.Groups[gi].Program[j]
			name := s.cur.sc.Groups[gi].Name
			switch {
			case op.Kind == task.OpChoose && op.Prob > 0 && op.Prob < 1:
				first := 0.0
				if op.Prob >= 0.5 {
					first = 1
				}
				for _, p := range []float64{first, 1 - first} {
					c := s.cur
					c.sc = clone(s.cur.sc)
					c.sc.Groups[gi].Program[j].Prob = p
					what := "never jumps"
					if p == 1 {
						what = "always jumps"
					}
					if s.try(c, s.so.Seeds, fmt.Sprintf("%s step %d %s", name, j, what)) {
						changed = true
						break
					}
				}
			case (op.Kind == task.OpCompute || op.Kind == task.OpSleep) && op.Max > op.Min:
				c := s.cur
				c.sc = clone(s.cur.sc)
				c.sc.Groups[gi].Program[j].Max = 0
				if s.try(c, s.so.Seeds, fmt.Sprintf("%s step %d fixed at %v", name, j, time.Duration(op.Min))) {
					changed = true
				}
			}
		}
	}
	return changed
}

// steps removes the code no task reaches, then program steps one at a
// time from the end (jumps remapped).
func (s *shrinker) steps() bool {
	changed := false
	for gi := range s.cur.sc.Groups {
		p := s.cur.sc.Groups[gi].Program
		if keep := reachable(p); slices.Contains(keep, false) && slices.Contains(keep, true) {
			c := s.cur
			c.sc = clone(s.cur.sc)
			q := c.sc.Groups[gi].Program
			for k := len(q) - 1; k >= 0; k-- {
				if !keep[k] {
					q = dropOp(q, k)
				}
			}
			c.sc.Groups[gi].Program = q
			if s.try(c, s.so.Seeds, fmt.Sprintf("%s: %d steps no task reaches removed", c.sc.Groups[gi].Name, len(p)-len(q))) {
				changed = true
			}
		}
	}
	for gi := range s.cur.sc.Groups {
		for k := len(s.cur.sc.Groups[gi].Program) - 1; k >= 0 && len(s.cur.sc.Groups[gi].Program) > 1 && !s.out(); k-- {
			if k >= len(s.cur.sc.Groups[gi].Program) {
				continue
			}
			c := s.cur
			c.sc = clone(s.cur.sc)
			c.sc.Groups[gi].Program = dropOp(c.sc.Groups[gi].Program, k)
			if s.try(c, s.so.Seeds, fmt.Sprintf("%s step %d removed", c.sc.Groups[gi].Name, k)) {
				changed = true
			}
		}
	}
	return changed
}

// reachable marks the steps a task can reach from the first: choose with
// a probability of 0 or 1 goes one way only, a forever-loop only back.
func reachable(p []workload.Op) []bool {
	seen := make([]bool, len(p))
	stack := []int{0}
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if pc < 0 || pc >= len(p) || seen[pc] {
			continue
		}
		seen[pc] = true
		op := p[pc]
		switch {
		case op.Kind == task.OpExit:
		case op.Kind == task.OpLoop && op.Count == 0:
			stack = append(stack, op.Jump)
		case op.Kind == task.OpChoose && op.Prob >= 1:
			stack = append(stack, op.Jump)
		case op.Kind == task.OpChoose && op.Prob <= 0:
			stack = append(stack, pc+1)
		case op.Kind == task.OpLoop || op.Kind == task.OpChoose || op.Kind == task.OpWWLock:
			stack = append(stack, op.Jump, pc+1)
		default:
			// an interruptible lock's -EINTR path lands after its
			// unlock, which falling through reaches too
			stack = append(stack, pc+1)
		}
	}
	return seen
}

func clone(s *workload.Scenario) *workload.Scenario {
	c := *s
	c.Mutexes = append([]string(nil), s.Mutexes...)
	c.WW = append([]workload.WWSet(nil), s.WW...)
	c.Groups = make([]workload.Group, len(s.Groups))
	for i, g := range s.Groups {
		g.Program = append([]workload.Op(nil), g.Program...)
		c.Groups[i] = g
	}
	return &c
}

// dropOp removes step k, pointing jumps past it one step earlier and
// jumps to it at what follows it.
func dropOp(p []workload.Op, k int) []workload.Op {
	out := append(append([]workload.Op(nil), p[:k]...), p[k+1:]...)
	for i := range out {
		if out[i].Kind == task.OpLoop || out[i].Kind == task.OpChoose || out[i].Kind == task.OpWWLock {
			if out[i].Jump > k {
				out[i].Jump--
			}
			if out[i].Jump >= len(out) {
				out[i].Jump = len(out) - 1
			}
		}
	}
	return out
}
