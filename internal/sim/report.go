package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
)

// WriteFileAtomic writes via a temporary file in the same directory and
// renames it into place, so a reader never sees half a file. Errors name
// path, never the temporary file.
func WriteFileAtomic(path string, write func(w io.Writer) error) error {
	if err := writeFileAtomic(path, write); err != nil {
		return &os.PathError{Op: "write", Path: path, Err: underlying(err)}
	}
	return nil
}

func writeFileAtomic(path string, write func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	// CreateTemp makes the file 0600: give it a plain file's mode.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := write(bw); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// underlying strips the path (the temporary file's) from a file error.
func underlying(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// CheckWritable checks, before a run, that path can be written the way
// WriteFileAtomic writes it: its directory exists and takes new files,
// and path is not a directory. It leaves nothing behind.
func CheckWritable(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot write %s: no directory %s", path, dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("cannot write %s: %s is not a directory", path, dir)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %v", path, underlying(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// WritePreamble writes the seed and command line to the report file before
// the run starts, so that a run killed by the race detector
// (GORACE=halt_on_error=1) still leaves its reproducer behind.
func WritePreamble(path string, seed uint64, cmdline string) error {
	return WriteFileAtomic(path, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "proxysim report (run in progress or killed)\nversion: %s\nseed: %d\nreproduce: %s\n\nIf this is all the file holds, the process died before it could finish the report:\nlook at its stderr (a Go data race report under -race, or a crash).\n", Version(), seed, cmdline)
		return err
	})
}

// FormatSkew says how exact a run's cross-CPU latencies are: the clock skew
// bound they were measured with and the largest lateness a message between
// CPUs met, flagged when it exceeded the bound (a step that overshot its
// window).
func FormatSkew(bound, observed int64) string {
	s := fmt.Sprintf("skew bound %s (cross-CPU events taken at most this late, plus one step); largest IPI lateness %s", fmtNs(bound), fmtNs(observed))
	if observed > bound {
		s += " (over the bound)"
	}
	return s
}

// FormatSummary prints the human summary.
func FormatSummary(w io.Writer, s *Summary) {
	level := onOff(s.ProxyExec)
	if s.ProxyLevel == LevelSingleRQ {
		level = LevelSingleRQ
	}
	fmt.Fprintf(w, "proxysim: workload %s, seed %d, %d CPUs (%s), %d tasks, proxy execution %s\n", s.Workload, s.Seed, s.CPUs, s.Topology, s.Tasks, level)
	if len(s.Bugs) > 0 {
		fmt.Fprintf(w, "  bugs switched on: %s\n", strings.Join(s.Bugs, ", "))
	}
	if s.SchedFeatures != "" {
		fmt.Fprintf(w, "  sched features: %s\n", s.SchedFeatures)
	}
	fmt.Fprintf(w, "  virtual time      %s\n", fmtNs(s.SimTimeNs))
	fmt.Fprintf(w, "  clocks            %s\n", FormatSkew(s.ClockSkewBoundNs, s.MaxIPILatenessNs))
	fmt.Fprintf(w, "  wall time         %s\n", fmtNs(s.WallTimeNs))
	fmt.Fprintf(w, "  context switches  %d (%.0f per wall second)\n", s.ContextSwitches, s.SwitchesPerWallSecond)
	fmt.Fprintf(w, "  wakeups           %d\n", s.Wakeups)
	fmt.Fprintf(w, "  migrations        %d", s.Migrations)
	var parts []string
	for _, k := range sortedKeys(s.MigrationsByReason) {
		if v := s.MigrationsByReason[k]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, v))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  mutex contentions %d\n", s.MutexContentions)
	if s.ProxyExec {
		// Protocol operations, not task moves: the moves are in the
		// migrations line above (reasons proxy, chain, return).
		c := s.Counters
		fmt.Fprintf(w, "  proxy             picks %d, proxy_migrate_task calls %d, proxy_needs_return dequeues %d, proxy_activate wake-ups %d,\n", c["proxy_pick_same_rq"], c["proxy_migrations"], c["return_migrations"], c["proxy_activates"])
		fmt.Fprintf(w, "                    parked on sleeping owners %d, activated %d, donor hand-offs %d, resched idle %d\n", c["sleeping_owner_enqueues"], c["blocked_waiter_activations"], c["donor_handoffs"], c["proxy_resched_idle"])
	}
	if c := s.Counters; c["dl_replenishments"]+c["dl_admission_rejections"] > 0 {
		// SCHED_DEADLINE tasks ran (every DL task gets a first budget) or
		// one was refused.
		fmt.Fprintf(w, "  deadline          throttles %d, replenishments %d, pushes %d, pulls %d, donor picks %d, admission rejections %d\n",
			c["dl_throttles"], c["dl_replenishments"], c["dl_pushes"], c["dl_pulls"], c["dl_donor_picks"], c["dl_admission_rejections"])
	}
	if b := s.Bench; b != nil {
		fmt.Fprintf(w, "  benchmark         %s case %d:", b.Bench, b.Case)
		switch {
		case b.Kind == "finish" && b.Finished:
			fmt.Fprintf(w, " time to finish %s,", fmtNs(b.TimeNs))
		case b.Kind == "finish":
			fmt.Fprintf(w, " NOT FINISHED within the virtual time,")
		}
		fmt.Fprintf(w, " %d requests (%.0f/s), wake-up p99 %s, request p99 %s\n", b.Requests, b.RequestsPerSec, FormatBound(b.P99WakeupLatencyNs), FormatBound(b.P99RequestLatencyNs))
	}
	if c := s.Chain; c != nil {
		fmt.Fprintf(w, "  chain             %s waits for %s: %d, mean %s, p90 %s, max %s; unwinding from %s's release: %d, mean %s, p90 %s, max %s\n",
			c.Waiter, c.Head, c.Waits, fmtNs(c.MeanWaitNs), FormatBound(c.P90WaitNs), fmtNs(c.MaxWaitNs),
			c.End, c.Unwinds, fmtNs(c.MeanUnwindNs), FormatBound(c.P90UnwindNs), fmtNs(c.MaxUnwindNs))
	}
	fmt.Fprintf(w, "  groups (mutex waits and wake-up latencies, exact to the clock skew bound; p90, p99: the top of a histogram bucket, so \"<=\"):\n")
	fmt.Fprintf(w, "    %-10s %5s  %-10s  %-10s %-12s %-12s %-10s  %-12s %s\n", "GROUP", "TASKS", "RUNTIME", "WAIT MEAN", "WAIT P90", "WAIT P99", "WAIT MAX", "WAKEUP P99", "WAKEUP MAX")
	for _, name := range sortedKeys(s.Groups) {
		g := s.Groups[name]
		fmt.Fprintf(w, "    %-10s %5d  %-10s  %-10s %-12s %-12s %-10s  %-12s %s\n", name, g.Tasks, fmtNs(g.RuntimeNs), fmtNs(g.MeanMutexWaitNs),
			FormatBound(g.P90MutexWaitNs), FormatBound(g.P99MutexWaitNs), fmtNs(g.MaxMutexWaitNs), FormatBound(g.P99WakeupLatencyNs), fmtNs(g.MaxWakeupLatencyNs))
	}
	if s.StopReason != "" {
		fmt.Fprintf(w, "  stopped: %s\n", s.StopReason)
	}
	fmt.Fprintf(w, "  violations        %d\n", len(s.Violations))
	for i, v := range s.Violations {
		if i == 10 {
			fmt.Fprintf(w, "    ... %d more\n", len(s.Violations)-10)
			break
		}
		fmt.Fprintf(w, "    %s\n", v)
	}
	if s.KnownDefect != "" {
		fmt.Fprintf(w, "  %s\n", s.KnownDefect)
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func fmtNs(ns int64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3fs", float64(ns)/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.3fms", float64(ns)/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1fus", float64(ns)/1e3)
	}
	return fmt.Sprintf("%dns", ns)
}

// FormatBound prints an upper bound (a histogram bucket's top) as "<= X"
// with three significant digits, rounded up so that it stays a bound.
func FormatBound(ns int64) string {
	if ns <= 0 {
		return "0"
	}
	unit, div := "ns", 1.0
	switch {
	case ns >= 1e9:
		unit, div = "s", 1e9
	case ns >= 1e6:
		unit, div = "ms", 1e6
	case ns >= 1e3:
		unit, div = "us", 1e3
	}
	v := float64(ns) / div
	scale := 100.0 // three significant digits: v in [1, 1000)
	if v >= 100 {
		scale = 1
	} else if v >= 10 {
		scale = 10
	}
	v = math.Ceil(v*scale) / scale
	return "<=" + strconv.FormatFloat(v, 'f', -1, 64) + unit
}

// FormatReport writes the failure report: what broke, where, the
// blocked_on chains of the tasks involved (like the kernel's hung-task
// blocker report), the state of every CPU and contended mutex, the merged
// flight-recorder events, and the command that reproduces the run.
func (r *Run) FormatReport(w io.Writer, s *Summary, cmdline string, lastEvents int) {
	m := r.Machine
	fmt.Fprintf(w, "proxysim failure report\n=======================\n\n")
	fmt.Fprintf(w, "reproduce: %s\n", cmdline)
	fmt.Fprintf(w, "version: %s\n", Version())
	fmt.Fprintf(w, "seed: %d  cpus: %d  tasks: %d  workload: %s  proxy_exec: %s  bugs: %s\n", s.Seed, s.CPUs, s.Tasks, s.Workload, onOff(s.ProxyExec), strings.Join(s.Bugs, ","))
	fmt.Fprintf(w, "stopped: %s\n", s.StopReason)
	if s.KnownDefect != "" {
		fmt.Fprintf(w, "%s\n", s.KnownDefect)
	}
	fmt.Fprintln(w)
	if r.Explanation == "" && len(s.Violations) > 0 && !m.Stuck {
		var b strings.Builder
		r.ExplainEvents(s.Violations[0], 30).WriteText(&b, 100)
		r.Explanation = b.String()
	}
	if r.Explanation != "" {
		from := r.ExplanationOf
		if from == "" {
			from = "this run"
		}
		fmt.Fprintf(w, "explanation of %s (proxysim explain):\n\n%s\n", from, r.Explanation)
	}
	fmt.Fprintf(w, "violations (%d):\n", len(s.Violations))
	for _, v := range s.Violations {
		fmt.Fprintf(w, "  [event #%d, t=%s] %s\n", v.Seq, fmtNs(v.Time), v)
	}
	if m.HangDump != "" {
		fmt.Fprintf(w, "\ngoroutine stacks at the hang:\n%s\n", m.HangDump)
	}
	if m.Stuck {
		fmt.Fprintf(w, "\nCPUs did not stop; task and runqueue state cannot be read safely.\n")
		return
	}
	involved := map[int]bool{}
	for _, v := range s.Violations {
		if v.Task > 0 {
			involved[v.Task] = true
		}
		// tasks named in the message (a panic names its task only there)
		for _, p := range m.Tasks() {
			if p != nil && strings.Contains(v.Message, p.String()+" ") || p != nil && strings.HasSuffix(v.Message, p.String()) {
				involved[p.ID] = true
			}
		}
	}
	fmt.Fprintf(w, "\nblocked_on chains of the tasks involved:\n")
	ids := make([]int, 0, len(involved))
	for id := range involved {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		r.writeChain(w, m.Task(id))
	}
	fmt.Fprintf(w, "\nCPUs:\n")
	for c := 0; c < m.NumCPUs(); c++ {
		q := m.RQ(c)
		if q.Curr() == q.Idle && q.NrRunning() == 0 && !involvedCPU(q.Tasks(), involved) && !violCPU(s, c) {
			continue
		}
		names := []string{}
		for _, t := range q.Tasks() {
			names = append(names, t.String())
		}
		fmt.Fprintf(w, "  cpu%-3d clock %-12s curr %-14s donor %-14s nr_running %d need_resched %v queued [%s]\n", c, fmtNs(m.Now(c)),
			q.Curr(), q.PeekDonor(), q.NrRunning(), q.NeedResched(), strings.Join(names, " "))
	}
	fmt.Fprintf(w, "\ncontended mutexes:\n")
	for _, mx := range m.Mutexes() {
		owner, flags, ws := mx.Peek()
		if len(ws) == 0 && flags == 0 {
			continue
		}
		names := []string{}
		for _, t := range ws {
			names = append(names, t.String())
		}
		fmt.Fprintf(w, "  %-12s owner %-14s flags %#x waiters [%s]\n", mx, owner, flags, strings.Join(names, " "))
	}
	events := m.Log.Merged(lastEvents)
	fmt.Fprintf(w, "\nlast %d events (all CPUs, global order):\n", len(events))
	for _, e := range events {
		fmt.Fprintf(w, "  %s\n", e.Format(r.TaskName))
	}
	if len(involved) > 0 {
		fmt.Fprintf(w, "\nevents of the tasks involved:\n")
		for _, e := range m.Log.Merged(0) {
			if involved[int(e.Task)] || (e.Kind == trace.EvSwitch && (involved[int(e.A)] || involved[int(e.B)])) || (e.Kind == trace.EvProxyPick && involved[int(e.A)]) {
				fmt.Fprintf(w, "  %s\n", e.Format(r.TaskName))
			}
		}
	}
	// The reporting CPU's own ring: what it did up to the violation,
	// whichever tasks it touched (its idle switches, the donors it picked
	// for, the balance passes), which the all-CPU tail above may hold only
	// the last microseconds of on a big machine.
	seen := map[int]bool{}
	for _, v := range s.Violations {
		if v.CPU < 0 || v.CPU >= len(m.Log.Rings) || seen[v.CPU] || len(seen) == 2 {
			continue
		}
		seen[v.CPU] = true
		evs := m.Log.Rings[v.CPU].Events()
		if lastEvents > 0 && len(evs) > lastEvents {
			evs = evs[len(evs)-lastEvents:]
		}
		fmt.Fprintf(w, "\nlast %d events of cpu%d (its own ring):\n", len(evs), v.CPU)
		for _, e := range evs {
			fmt.Fprintf(w, "  %s\n", e.Format(r.TaskName))
		}
	}
}

func involvedCPU(ts []*task.Task, inv map[int]bool) bool {
	for _, t := range ts {
		if inv[t.ID] {
			return true
		}
	}
	return false
}

func violCPU(s *Summary, c int) bool {
	for _, v := range s.Violations {
		if v.CPU == c {
			return true
		}
	}
	return false
}

// writeChain prints who blocks whom, starting at p.
func (r *Run) writeChain(w io.Writer, p *task.Task) {
	seen := map[*task.Task]bool{}
	indent := "  "
	for i := 0; p != nil && i < 64; i++ {
		mx, bo, donor := p.Peek()
		fmt.Fprintf(w, "%s%v: state %s, on_rq %d, on_cpu %v, cpu %d, wake_cpu %d, mask %v, prio %d, is_blocked %v",
			indent, p, p.State(), p.OnRQ(), p.OnCPU(), p.CPU(), p.WakeCPU, p.CPUsMask, p.SE.Prio, bo)
		if donor != nil {
			fmt.Fprintf(w, ", blocked_donor %v", donor)
		}
		if so := p.SleepingOwner.Load(); so != nil {
			fmt.Fprintf(w, ", parked on %v", so)
		}
		fmt.Fprintln(w)
		if mx == nil || seen[p] {
			if seen[p] {
				fmt.Fprintf(w, "%s  (cycle)\n", indent)
			}
			return
		}
		seen[p] = true
		owner := mx.OwnerTask()
		fmt.Fprintf(w, "%s  blocked on %v, owned by %v\n", indent, mx, owner)
		p = owner
		indent += "  "
	}
}
