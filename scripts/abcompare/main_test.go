package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/ab"
	"github.com/proxysim/proxysim/internal/sim"
)

// A small input: three tbench cells of a report and a results file with
// off and single-rq at two cases. Case 1: the report gains 3% (beyond
// its CVs), proxysim gains 5%: agree. Case 2: the report gains 2% beyond
// its CVs, proxysim runs off's schedule (same trace hashes): disagree,
// 1.00, no mutex waiter. Case 4: within the report's CV: not listed.
// Case 8 has no proxysim result: not run.
func TestCompareSmall(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "reports.tsv")
	data := "# header\n" +
		"v18\tf.txt\t10\ttbench\t1\tproxy_exec\t1.03\t3.00\t0.50\t0.40\n" +
		"v18\tf.txt\t11\ttbench\t2\tproxy_exec\t1.02\t2.00\t0.50\t0.40\n" +
		"v18\tf.txt\t12\ttbench\t4\tproxy_exec\t1.01\t1.00\t2.00\t0.40\n" +
		"v18\tf.txt\t13\ttbench\t8\tproxy_exec\t0.97\t-3.00\t0.50\t0.40\n"
	if err := os.WriteFile(rep, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := readReports(rep)
	if err != nil || len(rows) != 4 {
		t.Fatalf("rows %v %v", rows, err)
	}
	res := func(c int, cfg string, seed uint64, rps float64, hash string) ab.Result {
		return ab.Result{Case: c, Config: cfg, Seed: seed, CPUs: 4, SimTimeNs: 1e9, TraceHash: hash,
			Bench:  sim.BenchFigures{Bench: "tbench", Kind: "throughput", Requests: 1000, RequestsPerSec: rps},
			Counts: map[string]uint64{}}
	}
	f := &ab.File{Version: ab.FileVersion, Spec: ab.Spec{Workload: "tbench", Bench: "tbench", Primary: "clients", CPUs: 4,
		Topology: "t", SimTimeNs: 1e9, Strategy: "time", Cases: []int{1, 2}, Configs: []string{"off", "single-rq"}, Seeds: 2, FirstSeed: 1},
		Results: []ab.Result{
			res(1, "off", 1, 100, "a"), res(1, "off", 2, 100, "b"), res(1, "single-rq", 1, 105, "c"), res(1, "single-rq", 2, 105, "d"),
			res(2, "off", 1, 100, "e"), res(2, "off", 2, 100, "f"), res(2, "single-rq", 1, 100, "e"), res(2, "single-rq", 2, 100, "f"),
		}}
	if err := sim.WriteFileAtomic(filepath.Join(dir, "tbench.json"), f.Write); err != nil {
		t.Fatal(err)
	}
	tb, err := loadResults(dir, []matrix{{name: "tbench"}, {name: "netperf"}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := compare(&b, rows, tb, "HEADER\n"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"HEADER\n",
		"Agreement: proxysim's difference has the report's sign in **1 of 3** comparisons of report cells beyond their CV (1 without a proxysim result).",
		"| tbench | 3 | 1 |",
		"| v18 (f.txt:10) | tbench | 1 | proxy_exec (single-rq) | 1.03 [3.00](0.50), 0.40 | 1.05 [5.00](0.00) | agree |",
		"| v18 (f.txt:11) | tbench | 2 | proxy_exec (single-rq) | 1.02 [2.00](0.50), 0.40 | 1.00 [0.00](0.00) | disagree (1.00) | no mutex waiter on this path",
		"| v18 (f.txt:13) | tbench | 8 | proxy_exec (single-rq) | 0.97 [-3.00](0.50), 0.40 | -- | not run |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "f.txt:12") {
		t.Errorf("a cell within its CV is listed:\n%s", out)
	}
}

// The section between the markers is replaced, the rest kept.
func TestReplaceSection(t *testing.T) {
	p := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(p, []byte("a\n<!-- abcompare:begin -->\nold\n<!-- abcompare:end -->\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := replaceSection(p, "abcompare", "new\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if string(got) != "a\n<!-- abcompare:begin -->\nnew\n<!-- abcompare:end -->\nb\n" {
		t.Errorf("got %q", got)
	}
	if err := replaceSection(filepath.Join(t.TempDir(), "none.md"), "abcompare", "x"); err == nil {
		t.Errorf("a missing file gave no error")
	}
}

// Every transcribed line of the repository's reports file maps to a
// proxysim test and configuration.
func TestReportsFileMaps(t *testing.T) {
	rows, err := readReports("reports.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 200 {
		t.Errorf("%d rows: the three reports have 234 cells of the compared tests", len(rows))
	}
}

// Bad input is one line on stderr and exit 2; -help is the usage on
// stdout and exit 0.
func TestCLIErrors(t *testing.T) {
	for _, args := range [][]string{{"-bogus"}, {"-seeds", "0"}, {"extra"}, {"-results", filepath.Join(t.TempDir(), "none")}} {
		var out, errs bytes.Buffer
		if code := cli(args, &out, &errs); code != 2 || strings.Count(errs.String(), "\n") != 1 || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q: want exit 2, one line on stderr", args, code, out.String(), errs.String())
		}
	}
	var out, errs bytes.Buffer
	if code := cli([]string{"-help"}, &out, &errs); code != 0 || !strings.Contains(out.String(), "-results") || errs.Len() != 0 {
		t.Errorf("-help: exit %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
}
