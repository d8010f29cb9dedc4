package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/workload"
)

const exploreUsage = `Usage: proxysim explore [flags]

Schedule exploration: many short deterministic runs (--deterministic, one
CPU goroutine at a time under --strategy), seeds --seed, --seed+1, ...,
in parallel workers bounded by the host's cores, stopping at the first
failure. Prints a progress line (runs done, runs per second, distinct
interleavings seen, by trace hash) and, on a failure, writes its report
and the command that replays it.

` + bugNeedsHelp + `Flags:
`

// exploreFlags are explore's own flags beside the machine's.
type exploreFlags struct {
	machineFlags
	runs, workers int
	every         time.Duration
	sink          failureSink
}

// newExploreFlags is explore's flag set.
func newExploreFlags() (*flag.FlagSet, *exploreFlags) {
	fs := newFlagSet("explore")
	ef := &exploreFlags{}
	def := sim.Defaults()
	def.CPUs, def.Workload, def.SimTime = 8, "stress", 100*time.Millisecond
	def.Deterministic, def.Strategy = true, "pct:3"
	def.MaxSkew = huntMaxSkew
	ef.register(fs, def, "proxysim-explore-SEED.report")
	fs.IntVar(&ef.runs, "runs", 100, "number of runs")
	fs.IntVar(&ef.workers, "workers", runtime.NumCPU(), fmt.Sprintf("parallel workers, 1 to the host's cores (%d)", runtime.NumCPU()))
	fs.DurationVar(&ef.every, "progress", 2*time.Second, "progress line interval (positive)")
	ef.sink.register(fs)
	return fs, ef
}

func cmdExplore(args []string, stdout, stderr io.Writer) (int, error) {
	fs, ef := newExploreFlags()
	mf, runs, workers, every := &ef.machineFlags, &ef.runs, &ef.workers, &ef.every
	if err := parse(fs, args, exploreUsage, stdout); err != nil {
		return 0, err
	}
	if err := mf.finish(fs); err != nil {
		return 0, err
	}
	if !mf.o.Deterministic {
		return 0, usagef("explore runs deterministic runs: --deterministic=false makes no sense here")
	}
	if *runs < 1 {
		return 0, usagef("--runs must be at least 1")
	}
	if *workers < 1 || *workers > runtime.NumCPU() {
		return 0, usagef("--workers %d out of range 1-%d (the host's cores)", *workers, runtime.NumCPU())
	}
	if *every <= 0 {
		return 0, usagef("--progress must be positive, not %v", *every)
	}
	if mf.serve.metricsAddr != "" || mf.serve.shards > 1 || mf.trace != "" {
		return 0, usagef("--metrics-addr, --shards and --trace apply to run and stress, not to explore's many runs")
	}
	if err := mf.checkOutputs(); err != nil {
		return 0, err
	}
	stopProfile, err := startCPUProfile(mf.cpuprofile, stderr)
	if err != nil {
		return 0, err
	}
	defer stopProfile()
	log, err := mf.logs.build()
	if err != nil {
		return 0, err
	}
	defer log.Sync()
	mf.printNeedNote("explore", stderr)
	sc, err := mf.loadScenario()
	if err != nil {
		return 0, err
	}
	base := mf.o.Seed
	log.Info("proxysim explore starting", zap.Uint64("first_seed", base), zap.Int("runs", *runs), zap.String("strategy", mf.o.Strategy),
		zap.Int("cpus", mf.o.CPUs), zap.String("workload", sc.Name), zap.Strings("bugs", mf.o.Bugs.Names()), zap.Int("workers", *workers))

	var done atomic.Int64
	var mu sync.Mutex
	hashes := map[string]bool{}
	var failed *sim.Run
	var failedSum *sim.Summary
	var failedSeed uint64
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A signal stops the runs in flight and keeps what was found.
	running := newInFlight()
	in := watchInterrupts(stderr, "exploring")
	defer in.close()
	in.setStop(func() {
		cancel()
		running.stopAll("signal: " + in.signal().String())
	})
	stopProgress := make(chan struct{})
	go func() {
		if mf.quiet {
			return
		}
		t := time.NewTicker(*every)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				mu.Lock()
				n := len(hashes)
				mu.Unlock()
				d := done.Load()
				log.Info(fmt.Sprintf("explore: %d/%d runs, %.1f runs/s, %d distinct interleavings", d, *runs, float64(d)/time.Since(start).Seconds(), n))
			}
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(*workers)
	var next atomic.Int64
	for w := 0; w < *workers; w++ {
		g.Go(func() error {
			for {
				i := next.Add(1) - 1
				if i >= int64(*runs) || gctx.Err() != nil {
					return nil
				}
				o := mf.o
				o.Seed = base + uint64(i)
				r, err := sim.Build(o, sc)
				if err != nil {
					return err
				}
				s, ok := running.execute(gctx, r)
				if !ok {
					return nil
				}
				mu.Lock()
				if r.Machine.StopReason() != "" && !s.Failed() {
					// cut short by a signal: neither a run nor an interleaving
					mu.Unlock()
					return nil
				}
				done.Add(1)
				hashes[s.TraceHash] = true
				if s.Failed() && (failed == nil || o.Seed < failedSeed) {
					failed, failedSum, failedSeed = r, s, o.Seed
				}
				mu.Unlock()
				if s.Failed() {
					cancel()
					return nil
				}
			}
		})
	}
	err = g.Wait()
	close(stopProgress)
	if err != nil {
		return exitInternal, err
	}
	el := time.Since(start)
	res := exploreResult{Runs: done.Load(), WallNs: int64(el), RunsPerSecond: float64(done.Load()) / el.Seconds(),
		Interleavings: len(hashes), Strategy: mf.o.Strategy, FirstSeed: base, Interrupted: in.interrupted() && failed == nil}
	code := exitOK
	var rep *reproduction
	if failed != nil {
		code = exitViolation
		cmdline := reproduceExplore(args, failedSeed, sc)
		path := mf.report
		if path == "" {
			path = fmt.Sprintf("proxysim-explore-%d.report", failedSeed)
		}
		fmf := *mf // the failing run's own flags: its seed, its report
		fmf.o.Seed, fmf.report = failedSeed, path
		rep = explainRepro(fmf.o, mf.loadScenario)
		rep.path = path
		failed.Explanation = rep.text()
		if err := sim.WriteFileAtomic(path, func(w io.Writer) error {
			failed.FormatReport(w, failedSum, cmdline, mf.events)
			return nil
		}); err != nil {
			return exitInternal, fmt.Errorf("cannot write the report: %v", err)
		}
		res.Seed, res.Violation, res.KnownDefect, res.Report, res.Replay = failedSeed, &failedSum.Violations[0], failedSum.KnownDefect, path, "proxysim replay "+shellQuote(path)
		res.Explain = "proxysim explain " + shellQuote(path)
		in.setStop(ef.sink.interrupt) // a signal now ends the failure's shrink
		defer ef.sink.file(failed, failedSum, rep, &fmf, cmdline, stderr)
	} else if res.Interrupted {
		code = in.exitCode()
	}
	if mf.json {
		return code, writeJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "explored %d runs in %v (%.1f runs/s), %d distinct interleavings (trace hashes), strategy %s\n",
		res.Runs, el.Round(time.Millisecond), res.RunsPerSecond, res.Interleavings, res.Strategy)
	switch {
	case res.Violation != nil:
		fmt.Fprintf(stdout, "violation at seed %d: %s\n", res.Seed, *res.Violation)
		if res.KnownDefect != "" {
			fmt.Fprintf(stdout, "%s\n", res.KnownDefect)
		}
		fmt.Fprintf(stdout, "report: %s\nreplay: %s\nexplain: %s\n", res.Report, res.Replay, res.Explain)
	case res.Interrupted:
		fmt.Fprintf(stdout, "interrupted: no violation in the %d runs done\n", res.Runs)
	default:
		fmt.Fprintln(stdout, "no violation")
	}
	return code, nil
}

// exploreResult is explore's result (--json prints it).
type exploreResult struct {
	Runs          int64            `json:"runs"`
	WallNs        int64            `json:"wall_ns"`
	RunsPerSecond float64          `json:"runs_per_second"`
	Interleavings int              `json:"interleavings"` // distinct trace hashes
	Strategy      string           `json:"strategy"`
	FirstSeed     uint64           `json:"first_seed"`
	Interrupted   bool             `json:"interrupted,omitempty"`
	Seed          uint64           `json:"seed,omitempty"` // of the first failing run
	Violation     *check.Violation `json:"violation,omitempty"`
	KnownDefect   string           `json:"known_defect,omitempty"`
	Report        string           `json:"report,omitempty"`
	Replay        string           `json:"replay,omitempty"`
	Explain       string           `json:"explain,omitempty"`
}

// reproduceExplore is the single deterministic run that repeats the
// failing seed: `proxysim run --deterministic` with the explore flags that
// apply to one run, plus the seed. It is a run, not a stress, command:
// explore's runs have none of stress's injectors (shuffles, jitter,
// stutter), and run's defaults are explore's but for the few spelled out
// here.
func reproduceExplore(args []string, seed uint64, sc *workload.Scenario) string {
	parts := append([]string{"proxysim", "run", "--deterministic"},
		withoutFlags(args, "runs", "workers", "progress", "seed", "report", "shard", "shards", "metrics-addr", "linger", "failures", "shrink-budget")...)
	has := func(f string) bool {
		for _, a := range args {
			for _, form := range []string{"-" + f, "--" + f} {
				if a == form || strings.HasPrefix(a, form+"=") {
					return true
				}
			}
		}
		return false
	}
	// explore's defaults differ from run's: spell them out
	if !has("cpus") && !has("topology") && sc.CPUs == 0 {
		parts = append(parts, "--cpus", "8")
	}
	if !has("workload") {
		parts = append(parts, "--workload", "stress")
	}
	if !has("sim-time") {
		parts = append(parts, "--sim-time", "100ms")
	}
	if !has("strategy") {
		parts = append(parts, "--strategy", "pct:3")
	}
	if !has("max-skew") {
		parts = append(parts, "--max-skew", huntMaxSkew.String())
	}
	parts = append(parts, fmt.Sprintf("--seed %d", seed))
	return strings.Join(parts, " ")
}

// withoutFlags returns args, shell-quoted, less the named flags (given as
// -name or --name, with their value as -name=v or as the next word).
func withoutFlags(args []string, names ...string) []string {
	drop := map[string]bool{}
	for _, n := range names {
		drop["-"+n], drop["--"+n] = true, true
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(a, "=")
		if drop[name] {
			if !hasValue {
				i++ // the value is the next word
			}
			continue
		}
		out = append(out, shellQuote(a))
	}
	return out
}
