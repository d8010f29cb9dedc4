package sim

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxysim/proxysim/internal/workload"
)

// rewrite regenerates testdata files instead of comparing against them
// (the datadriven -rewrite habit): go test ./internal/sim -run Golden -rewrite
var rewrite = flag.Bool("rewrite", false, "rewrite golden files instead of checking them")

const goldenHashes = "testdata/golden_trace_hashes.txt"

// goldenCase is one deterministic run whose trace hash is held fixed.
type goldenCase struct {
	workload string
	cpus     int
	strategy string
	seed     uint64
	proxy    bool
}

func (c goldenCase) key() string {
	px := "on"
	if !c.proxy {
		px = "off"
	}
	return fmt.Sprintf("%s cpus=%d strategy=%s seed=%d proxy=%s", c.workload, c.cpus, c.strategy, c.seed, px)
}

func goldenCases() []goldenCase {
	var cs []goldenCase
	for _, w := range workload.BuiltinNames() {
		for _, cpus := range []int{4, 16} {
			for _, strat := range []string{"time", "random", "pct:3"} {
				for seed := uint64(1); seed <= 5; seed++ {
					for _, proxy := range []bool{true, false} {
						cs = append(cs, goldenCase{w, cpus, strat, seed, proxy})
					}
				}
			}
		}
	}
	return cs
}

// goldenSimTime is the virtual length of each golden run: long enough
// that every workload takes its locks, proxies and migrates, short
// enough that the 240 runs take seconds (about half a minute under -race).
const goldenSimTime = 10 * time.Millisecond

// TestGoldenTraceHashes holds the model's behaviour fixed: every
// deterministic run of the matrix must give the trace hash recorded in
// testdata. A change that alters behaviour on purpose rewrites the file
// with -rewrite and says in its commit which behaviour changed and why.
func TestGoldenTraceHashes(t *testing.T) {
	got := map[string]string{}
	var keys []string
	for _, c := range goldenCases() {
		o := Defaults()
		o.Workload, o.CPUs, o.Strategy, o.Seed, o.Proxy = c.workload, c.cpus, c.strategy, c.seed, c.proxy
		o.SimTime, o.Deterministic = goldenSimTime, true
		s := run(t, o)
		if s.Failed() {
			t.Fatalf("%s: %v", c.key(), s.Violations[0])
		}
		if s.TraceHash == "" {
			t.Fatalf("%s: no trace hash", c.key())
		}
		got[c.key()] = fmt.Sprintf("%s events=%d", s.TraceHash, s.Events)
		keys = append(keys, c.key())
	}
	path := filepath.FromSlash(goldenHashes)
	if *rewrite {
		var b strings.Builder
		b.WriteString("# trace_hash of deterministic runs (10ms virtual each); rewrite with: go test ./internal/sim -run GoldenTraceHashes -rewrite\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %s\n", k, got[k])
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (create it with -rewrite)", err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("%s: malformed line %q", path, line)
		}
		want[k] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	diffs := 0
	for _, k := range keys {
		if want[k] != got[k] {
			diffs++
			if diffs <= 20 {
				t.Errorf("%s: got %s, golden %s", k, got[k], want[k])
			}
		}
	}
	if len(want) != len(keys) {
		t.Errorf("golden file has %d cases, the matrix %d", len(want), len(keys))
	}
	if diffs > 0 {
		t.Errorf("%d of %d trace hashes differ from %s; if the change of behaviour is intended, rerun with -rewrite and say why in the commit", diffs, len(keys), path)
	}
}
