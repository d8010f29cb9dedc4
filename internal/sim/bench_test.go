package sim

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkSwitchRate reports simulated context switches per wall second
// at 256 CPUs on the default workload (mixed), proxy execution on and off.
// Run with and without -race:
//
//	go test -run '^$' -bench SwitchRate -benchtime 3x ./internal/sim
//	go test -race -run '^$' -bench SwitchRate -benchtime 1x ./internal/sim
func BenchmarkSwitchRate(b *testing.B) {
	for _, proxy := range []bool{true, false} {
		name := "proxy=on"
		if !proxy {
			name = "proxy=off"
		}
		b.Run(name, func(b *testing.B) {
			var switches, events uint64
			var wall time.Duration
			for i := 0; i < b.N; i++ {
				o := Defaults()
				o.SimTime = 200 * time.Millisecond
				o.Seed = uint64(i + 1)
				o.Proxy = proxy
				sc, err := LoadScenario(o.Workload, o.CPUs, o.Tasks)
				if err != nil {
					b.Fatal(err)
				}
				r, err := Build(o, sc)
				if err != nil {
					b.Fatal(err)
				}
				s := r.Execute()
				if s.Failed() {
					b.Fatal(s.Violations[0])
				}
				switches += s.ContextSwitches
				events += r.Machine.EventCount()
				wall += r.Machine.WallTime()
			}
			b.ReportMetric(float64(switches)/wall.Seconds(), "switches/s")
			b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
		})
	}
}

// BenchmarkEventCost reports the wall cost of one simulated event (and of
// one context switch) at 32 to 1024 CPUs on the default workload with
// proxy execution on, to check that the per-event cost stays flat as
// the machine grows (within 1.5x from 32 to 1024). Each size
// simulates at least 25.6 CPU-seconds (32 CPUs 800 ms, 64 CPUs 400 ms,
// 256 and 1024 CPUs 100 ms), so that the small machines run long enough
// (100 ms at 32 CPUs is 50 ms of wall time, mostly the start) to be
// measured:
//
//	go test -run '^$' -bench EventCost -benchtime 2x ./internal/sim
func BenchmarkEventCost(b *testing.B) {
	for _, cpus := range []int{32, 64, 256, 1024} {
		b.Run(fmt.Sprintf("cpus=%d", cpus), func(b *testing.B) {
			var switches, events uint64
			var wall time.Duration
			for i := 0; i < b.N; i++ {
				o := Defaults()
				o.CPUs = cpus
				o.SimTime = max(100*time.Millisecond, 25600*time.Millisecond/time.Duration(cpus))
				o.Seed = uint64(i + 1)
				sc, err := LoadScenario(o.Workload, o.CPUs, o.Tasks)
				if err != nil {
					b.Fatal(err)
				}
				r, err := Build(o, sc)
				if err != nil {
					b.Fatal(err)
				}
				s := r.Execute()
				if s.Failed() {
					b.Fatal(s.Violations[0])
				}
				switches += s.ContextSwitches
				events += r.Machine.EventCount()
				wall += r.Machine.WallTime()
			}
			b.ReportMetric(float64(wall.Nanoseconds())/float64(events), "ns/event")
			b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
			b.ReportMetric(float64(switches)/wall.Seconds(), "switches/s")
		})
	}
}
