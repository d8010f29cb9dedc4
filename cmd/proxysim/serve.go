package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/proxysim/proxysim/internal/metrics"
	"github.com/proxysim/proxysim/internal/sim"
)

// serveFlags are the metrics and sharding flags of run and stress.
type serveFlags struct {
	metricsAddr string
	perCPU      bool
	linger      time.Duration
	shard       int
	shards      int
}

func (sv *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&sv.metricsAddr, "metrics-addr", "", fmt.Sprintf("serve Prometheus metrics here (off by default); \":PORT\" or \"PORT\" binds 127.0.0.1, a bare host gets port %d; 0.0.0.0 only if you write it", metrics.DefaultPort))
	fs.BoolVar(&sv.perCPU, "metrics-per-cpu", false, "also export per-CPU counter and gauge series (label cpu)")
	fs.DurationVar(&sv.linger, "linger", 0, "keep serving metrics this long after the run ends, so the last scrape sees the final values")
	def := 0
	if v, err := strconv.Atoi(os.Getenv("JOB_COMPLETION_INDEX")); err == nil {
		def = v
	}
	fs.IntVar(&sv.shard, "shard", def, "this shard's index, 0..shards-1 (default: $JOB_COMPLETION_INDEX, else 0)")
	fs.IntVar(&sv.shards, "shards", 1, "number of shards of a sharded soak run; each derives its seed from (seed, shard)")
}

// finish validates the flags and derives the shard's seed.
func (sv *serveFlags) finish(mf *machineFlags) error {
	if sv.shards < 1 || sv.shards > 1<<16 {
		return usagef("--shards %d out of range 1-65536", sv.shards)
	}
	if sv.shard < 0 || sv.shard >= sv.shards {
		return usagef("--shard %d out of range 0-%d", sv.shard, sv.shards-1)
	}
	if sv.linger < 0 {
		return usagef("--linger must not be negative")
	}
	if sv.metricsAddr != "" {
		a, err := metrics.ResolveAddr(sv.metricsAddr)
		if err != nil {
			return usagef("--metrics-addr: %v", err)
		}
		sv.metricsAddr = a
	}
	if sv.shards > 1 {
		// Deterministic per shard: the same (seed, shard) always runs the
		// same seed, and a sharded job without --seed is repeatable too.
		base := uint64(0x5eed)
		if mf.seed.set {
			base = mf.seed.v
		}
		mf.o.Seed = splitmix64(base + uint64(sv.shard))
		mf.seed.v, mf.seed.set = mf.o.Seed, true
	}
	return nil
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return (x ^ (x >> 31)) >> 16
}

// startMetrics serves the run's metrics if --metrics-addr was given. The
// returned function lingers, then shuts the server down.
func startMetrics(sv *serveFlags, r *sim.Run, log *zap.Logger) (func(), error) {
	if sv.metricsAddr == "" {
		return func() {}, nil
	}
	col := metrics.NewCollector(metrics.Options{PerCPU: sv.perCPU})
	col.SetSource(r.Machine, metrics.RunInfo{Workload: r.Scenario.Name, Seed: r.Opts.Seed, ProxyExec: r.Opts.Proxy, Shard: sv.shard, Shards: sv.shards,
		SkewBoundNs: r.Machine.SkewBound()})
	bound, shutdown, err := metrics.Serve(sv.metricsAddr, metrics.NewRegistry(col))
	if err != nil {
		return nil, usagef("--metrics-addr: %v", err)
	}
	log.Info("serving metrics", zap.String("url", "http://"+bound+metrics.MetricsPath), zap.Bool("per_cpu", sv.perCPU))
	return func() {
		if sv.linger > 0 {
			log.Info("lingering: metrics still served", zap.Duration("linger", sv.linger), zap.String("url", "http://"+bound+metrics.MetricsPath))
			time.Sleep(sv.linger)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(ctx)
	}, nil
}
