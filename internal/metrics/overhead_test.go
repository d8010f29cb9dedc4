//go:build unix

package metrics

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/sim"
)

// Flags of BenchmarkMetricsOverhead (go test ... -args -overhead.rounds 5).
var (
	overheadSimTime = flag.Duration("overhead.sim-time", 600*time.Millisecond,
		"BenchmarkMetricsOverhead: virtual time of each run (256 CPUs of the mixed workload simulate 150-250ms per wall second on 2 cores)")
	overheadRounds = flag.Int("overhead.rounds", 4,
		"BenchmarkMetricsOverhead: rounds, each one run without and one with metrics")
	overheadPerCPU = flag.Bool("overhead.per-cpu", false,
		"BenchmarkMetricsOverhead: also export the per-CPU series (--metrics-per-cpu)")
)

// BenchmarkMetricsOverhead compares the simulator's event rate with its
// metrics served and scraped every second against no metrics at all. The
// requirement is a ratio (with / without) of at least 0.95.
//
//	go test -run '^$' -bench MetricsOverhead -benchtime 1x ./internal/metrics
//
// Each round runs the same scenario twice, same seed and the same fixed
// virtual time (-overhead.sim-time, so both runs do about the same work):
// once bare, once with a Collector (default series; -overhead.per-cpu
// adds the per-CPU ones) served by Serve on 127.0.0.1 and scraped by ScrapeLoop every
// second, as Prometheus would. The order alternates between rounds (off,on
// then on,off) so that drift in the machine's load does not favour one
// side; an untimed warm-up run goes first. It reports the events per wall
// second of each side (all rounds pooled: events summed over wall time
// summed) and their ratio ("ratio", the figure the requirement is about),
// the scrapes done, and the same rates per CPU second of the whole test
// process ("cpu-ratio": the metrics server and the scraping client both
// run in it, so this charges them in full; it is less sensitive than wall
// time to other processes on the machine). It asserts nothing: wall clock
// rates depend on what else the machine runs, so read the ratio on a
// quiet machine, with more rounds or longer runs (-args -overhead.rounds 8
// -overhead.sim-time 2s) when the rounds disagree.
func BenchmarkMetricsOverhead(b *testing.B) {
	const (
		cpus     = 256
		workload = "mixed"
		seed     = 42
	)
	if *overheadRounds < 1 || *overheadSimTime <= 0 {
		b.Fatal("-overhead.rounds and -overhead.sim-time must be positive")
	}
	build := func(simTime time.Duration) *sim.Run {
		o := sim.Defaults()
		o.CPUs = cpus
		o.Workload = workload
		o.Seed = seed
		o.SimTime = simTime
		sc, err := sim.LoadScenario(o.Workload, o.CPUs, o.Tasks)
		if err != nil {
			b.Fatal(err)
		}
		r, err := sim.Build(o, sc)
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	// run executes one run, with metrics served and scraped every second
	// if withMetrics, and returns its events, wall time and scrapes.
	run := func(simTime time.Duration, withMetrics bool) (events uint64, wall, cpu time.Duration, scrapes int) {
		r := build(simTime)
		var (
			shutdown func(context.Context) error
			wg       sync.WaitGroup
		)
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		if withMetrics {
			c := NewCollector(Options{PerCPU: *overheadPerCPU})
			c.SetSource(r.Machine, RunInfo{Workload: workload, Seed: seed, ProxyExec: r.Opts.Proxy, Shards: 1})
			bound, sd, err := Serve("127.0.0.1:0", NewRegistry(c))
			if err != nil {
				b.Fatal(err)
			}
			shutdown = sd
			wg.Add(1)
			go func() {
				defer wg.Done()
				scrapes, _ = ScrapeLoop(ctx, "http://"+bound+MetricsPath, time.Second)
			}()
		}
		runtime.GC() // start both sides from a collected heap
		cpu0 := processCPU(b)
		s := r.Execute()
		if withMetrics {
			stop()
			wg.Wait()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := shutdown(sctx); err != nil {
				b.Errorf("metrics server: %v", err)
			}
			cancel()
		}
		cpu = processCPU(b) - cpu0
		if s.Failed() {
			b.Fatalf("violation in the benchmark run: %s: %s", s.Violations[0].Name, s.Violations[0].Message)
		}
		return r.Machine.EventCount(), r.Machine.WallTime(), cpu, scrapes
	}

	run(*overheadSimTime/4, false) // warm-up, not counted

	var (
		offEvents, onEvents uint64
		offWall, onWall     time.Duration
		offCPU, onCPU       time.Duration
		totalScrapes        int
	)
	for i := 0; i < b.N; i++ {
		for round := 0; round < *overheadRounds; round++ {
			var rates [2]float64 // off, on
			for k := 0; k < 2; k++ {
				with := (round+k)%2 == 1 // off,on then on,off
				ev, wall, cpu, sc := run(*overheadSimTime, with)
				if with {
					onEvents += ev
					onWall += wall
					onCPU += cpu
					totalScrapes += sc
					rates[1] = float64(ev) / wall.Seconds()
				} else {
					offEvents += ev
					offWall += wall
					offCPU += cpu
					rates[0] = float64(ev) / wall.Seconds()
				}
				if with && sc < int(wall/time.Second) {
					b.Logf("round %d: only %d scrapes in %v", round, sc, wall.Round(time.Millisecond))
				}
			}
			b.Logf("round %d: %.0f events/s without metrics, %.0f with; ratio %.3f",
				round, rates[0], rates[1], rates[1]/rates[0])
		}
	}
	off := float64(offEvents) / offWall.Seconds()
	on := float64(onEvents) / onWall.Seconds()
	ratio := on / off
	cpuRatio := (float64(onEvents) / onCPU.Seconds()) / (float64(offEvents) / offCPU.Seconds())
	b.ReportMetric(off, "events/s-off")
	b.ReportMetric(on, "events/s-metrics")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(float64(offEvents)/offCPU.Seconds(), "events/cpu-s-off")
	b.ReportMetric(float64(onEvents)/onCPU.Seconds(), "events/cpu-s-metrics")
	b.ReportMetric(cpuRatio, "cpu-ratio")
	b.ReportMetric(float64(totalScrapes), "scrapes")
	verdict := "meets"
	if ratio < 0.95 {
		verdict = "is below"
	}
	b.Log(fmt.Sprintf("pooled over %d rounds of %v virtual time on %d CPUs (%s, seed %d): ratio %.3f %s the required 0.95 (cpu-ratio %.3f; %d scrapes; %v with metrics, %v without)",
		*overheadRounds*b.N, *overheadSimTime, cpus, workload, seed, ratio, verdict, cpuRatio, totalScrapes, onWall.Round(time.Millisecond), offWall.Round(time.Millisecond)))
}

// processCPU is the user plus system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
