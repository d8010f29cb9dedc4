package sim

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// timingStep is the lateness one message may pick up under the time
// strategy: it comes in while its target is inside a step that is not a
// pure advance of its clock, at most a schedule with a switch and a
// resumed instruction (1300 ns with the default costs), rounded up.
const timingStep = 2 * time.Microsecond

// timingCase is one line of testdata/timing/expected.txt.
type timingCase struct {
	line                         int
	scenario, level, group, what string
	want                         int64
	hops                         int
}

func readTimingCases(t *testing.T) []timingCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "timing", "expected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cs []timingCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		w := strings.Fields(line)
		if len(w) != 6 {
			t.Fatalf("expected.txt:%d: want 6 fields, got %q", n, line)
		}
		want, err1 := strconv.ParseInt(w[4], 10, 64)
		hops, err2 := strconv.Atoi(w[5])
		if err1 != nil || err2 != nil || hops < 1 {
			t.Fatalf("expected.txt:%d: bad value or hops in %q", n, line)
		}
		cs = append(cs, timingCase{n, w[0], w[1], w[2], w[3], want, hops})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(cs) == 0 {
		t.Fatal("expected.txt holds no cases")
	}
	return cs
}

// figure reads a group's figure by its name in expected.txt.
func figure(g GroupSummary, what string) (int64, bool) {
	switch what {
	case "mean_request":
		return g.MeanRequestLatencyNs, true
	case "max_request":
		return g.MaxRequestLatencyNs, true
	case "max_wakeup":
		return g.MaxWakeupLatencyNs, true
	case "mean_wakeup":
		return g.MeanWakeupLatencyNs, true
	case "max_mutex_wait":
		return g.MaxMutexWaitNs, true
	case "mean_mutex_wait":
		return g.MeanMutexWaitNs, true
	}
	return 0, false
}

// TestTimingKnownAnswers runs the scenarios of testdata/timing, whose
// latencies are derived by hand from the model's costs in expected.txt,
// in every mode: concurrent, and deterministic with the time, random and
// pct strategies. Each figure must come within one step per cross-CPU hop
// of its derivation under the time strategy, and within that plus the
// clock skew bound per hop otherwise; every IPI must be taken within the
// bound plus one step of its sending.
func TestTimingKnownAnswers(t *testing.T) {
	cases := readTimingCases(t)
	type key struct{ scenario, level string }
	var order []key
	byRun := map[key][]timingCase{}
	for _, c := range cases {
		k := key{c.scenario, c.level}
		if byRun[k] == nil {
			order = append(order, k)
		}
		byRun[k] = append(byRun[k], c)
	}
	modes := []struct {
		name, strategy string
		det            bool
	}{{"concurrent", "", false}, {"time", "time", true}, {"random", "random", true}, {"pct", "pct:3", true}}
	for _, k := range order {
		for _, md := range modes {
			t.Run(k.scenario+"/"+k.level+"/"+md.name, func(t *testing.T) {
				o := Defaults()
				o.Workload = filepath.Join("testdata", "timing", k.scenario+".json")
				o.CPUs, o.SimTime, o.Seed = 0, 20*time.Millisecond, 1
				o.Deterministic, o.Strategy = md.det, md.strategy
				if !o.SetProxyLevel(k.level) {
					t.Fatalf("expected.txt: bad proxy level %q", k.level)
				}
				s := run(t, o)
				if s.Failed() {
					t.Fatalf("violation: %v", s.Violations[0])
				}
				bound := time.Duration(s.ClockSkewBoundNs)
				if late := time.Duration(s.MaxIPILatenessNs); late > bound+timingStep {
					t.Errorf("an IPI was taken %v after its sending: more than the skew bound %v plus a step", late, bound)
				}
				perHop := timingStep
				if md.name != "time" {
					perHop += bound
				}
				for _, c := range byRun[k] {
					g, ok := s.Groups[c.group]
					if !ok {
						t.Fatalf("expected.txt:%d: no group %q", c.line, c.group)
					}
					got, ok := figure(g, c.what)
					if !ok {
						t.Fatalf("expected.txt:%d: unknown figure %q", c.line, c.what)
					}
					tol := time.Duration(c.hops) * perHop
					if d := time.Duration(got - c.want); d > tol || -d > tol {
						t.Errorf("expected.txt:%d: %s %s = %v, want %v within %v (%d hops)", c.line, c.group, c.what,
							time.Duration(got), time.Duration(c.want), tol, c.hops)
					}
				}
			})
		}
	}
}
