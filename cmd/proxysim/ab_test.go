package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxysim/proxysim/internal/ab"
)

// Bad ab flags: one line on stderr naming the problem, exit 2, nothing run.
func TestABFlagErrors(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(`{"version": 1, "spec": {"workload": "tbench", "cpus": 4}, "results": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.json")
	if err := os.WriteFile(junk, []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "mixed"}, "not a benchmark"},
		{[]string{"--workload", "hackbench:groups=2"}, "which --cases varies"},
		{[]string{"--workload", "hackbench:loops=0"}, "out of range"},
		{[]string{"--workload", "hackbench:colour=3"}, "unknown parameter"},
		{[]string{"--cases", "1,x"}, "--cases"},
		{[]string{"--cases", "1,1"}, "given twice"},
		{[]string{"--cases", "100"}, "out of range"},
		{[]string{"--configs", "full"}, "at least two configs"},
		{[]string{"--configs", "off;medium"}, "want off, single-rq or full"},
		{[]string{"--configs", "off;off+cpu-before-on-rq"}, "bugs need proxy execution"},
		{[]string{"--configs", "off;full+no-such-bug"}, "--configs"},
		{[]string{"--configs", "full;full+SHARED_RUNQS"}, "unknown sched feature"},
		{[]string{"--configs", "full;full+bail=avg-idle"}, "need SHARED_RUNQ"},
		{[]string{"--configs", "full;full+SHARED_RUNQ+hooks=v9"}, "hooks"},
		{[]string{"--configs", "off;single-rq+no-sleeping-owners"}, "needs the full level"},
		{[]string{"--proxy-costs", "link=1ms,migrate=2h"}, "-proxy-costs: migrate=2h"},
		{[]string{"--proxy-costs", "juggle=1us"}, "unknown cost"},
		{[]string{"--workload", "inversion", "--cases", "0,5000"}, "out of range"},
		{[]string{"--workload", "hackbench", "--cases", "0"}, "out of range"},
		{[]string{"--seeds", "0"}, "--seeds"},
		{[]string{"--cpus", "0"}, "--cpus"},
		{[]string{"--topology", "1s-1llc-2c-2t", "--cpus", "8"}, "--topology"},
		{[]string{"--sim-time", "10us"}, "--sim-time"},
		{[]string{"--strategy", "bogus"}, "--strategy"},
		{[]string{"--metric", "rps"}, "no metric"},
		{[]string{"--stat", "mode"}, "--stat"},
		{[]string{"--optimistic-spin", "maybe"}, "want on or off"},
		{[]string{"--format", "xml"}, "--format"},
		{[]string{"--jobs", "0"}, "--jobs"},
		{[]string{"--cost-ipi", "-1"}, "--cost-ipi"},
		{[]string{"--out", filepath.Join(dir, "no", "such", "f.json")}, "--out"},
		{[]string{"--out", junk}, "not a proxysim ab results file"},
		{[]string{"--out", other}, "another matrix"},
		{[]string{"--plot", filepath.Join(dir, "p.svg")}, ".png"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, append([]string{"ab"}, c.args...)...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("ab %v: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", c.args, code, out, errs, c.want)
		}
	}
}

// A small matrix, then the same with one more seed and --out: the
// results already in the file are not rerun (a doctored value in it
// survives and shows in the table), only the new seed runs.
func TestABResume(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "hb.json")
	args := []string{"ab", "--workload", "hackbench:fds=2,loops=2", "--cases", "1,2", "--cpus", "2", "--configs", "off;full", "--out", out, "--quiet"}
	code, text, errs := runCLI(t, append(args, "--seeds", "1")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(text, "Case: off[pct imp](CV) full[pct imp](CV)") || !strings.Contains(text, "2-groups 1.00 [ -0.00]") {
		t.Fatalf("table:\n%s", text)
	}
	f, err := ab.ReadFile(out)
	if err != nil || f == nil || len(f.Results) != 4 {
		t.Fatalf("results file: %v %+v", err, f)
	}
	// doctor case 1, config full, seed 1: 1 second to finish
	for i := range f.Results {
		r := &f.Results[i]
		if r.Case == 1 && r.Config == "full" {
			r.Bench.TimeNs, r.WallNs = 1e9, 424242
		}
	}
	fh, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Write(fh); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	code, js, errs := runCLI(t, append(args, "--seeds", "2", "--format", "json")...)
	if code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	var tb struct {
		Rows []struct {
			Cells []struct {
				Config string    `json:"config"`
				Values []float64 `json:"values"`
			} `json:"cells"`
		} `json:"rows"`
		Results []ab.Result `json:"results"`
	}
	if err := json.Unmarshal([]byte(js), &tb); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if len(tb.Results) != 8 {
		t.Fatalf("results %d, want 8 (4 kept, 4 new)", len(tb.Results))
	}
	kept := 0
	for _, r := range tb.Results {
		if r.WallNs == 424242 {
			kept++
		}
	}
	if kept != 1 {
		t.Errorf("the doctored result was rerun (%d kept)", kept)
	}
	if v := tb.Rows[0].Cells[1].Values; len(v) != 2 || v[0] != 1 {
		t.Errorf("case 1 full values %v: want the doctored 1s first", v)
	}
	f2, err := ab.ReadFile(out)
	if err != nil || len(f2.Results) != 8 {
		t.Fatalf("file after resume: %v, %d results", err, len(f2.Results))
	}
	// nothing left to run: same table again, csv this time
	code, csv, errs := runCLI(t, append(args, "--seeds", "2", "--format", "csv")...)
	if code != exitOK || !strings.Contains(csv, "hackbench,1,1-groups,full,time,AMean,2,0,") {
		t.Errorf("csv rerun: exit %d %s\n%s", code, errs, csv)
	}
}

// --proxy-exec takes off, single-rq and full (on: full); a benchmark's
// run reports its figures and its level in --json; single-rq never
// proxy-migrates, full does on this hackbench (seed 3: on seeds 1 and 2
// no pipe->mutex waiter is ever picked while its owner runs elsewhere).
func TestRunProxyLevels(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--proxy-exec", "medium"},
		{"run", "--workload", "hackbench:loops=0"},
		{"run", "--workload", "schbench:colour=1"},
	} {
		code, _, errs := runCLI(t, args...)
		if code != exitUsage || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q: want exit 2, one line", args, code, errs)
		}
	}
	get := func(level string) map[string]any {
		code, out, errs := runCLI(t, "run", "--workload", "hackbench:groups=2,fds=4,loops=4,pipe=1", "--cpus", "4", "--seed", "3",
			"--deterministic", "--proxy-exec", level, "--json", "--quiet", "--report", filepath.Join(t.TempDir(), "r"),
			// without spinning: on this small hackbench the lockers spin on
			// running owners instead of blocking, and the levels differ
			// only in what they do with blocked donors
			"--optimistic-spin", "off")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", level, code, errs)
		}
		var s map[string]any
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	full, on, single := get("full"), get("on"), get("single-rq")
	if full["trace_hash"] != on["trace_hash"] || full["proxy_level"] != "full" {
		t.Errorf("on is not full: %v %v %v", full["trace_hash"], on["trace_hash"], full["proxy_level"])
	}
	if single["proxy_level"] != "single-rq" || single["proxy_exec"] != true {
		t.Errorf("single-rq: proxy_level %v proxy_exec %v", single["proxy_level"], single["proxy_exec"])
	}
	counter := func(s map[string]any, k string) float64 { return s["counters"].(map[string]any)[k].(float64) }
	if counter(single, "proxy_migrations") != 0 || counter(single, "sleeping_owner_enqueues") != 0 || counter(single, "proxy_deactivations") == 0 {
		t.Errorf("single-rq: proxy migrations %v, parked %v, deactivations %v: want 0, 0, some",
			counter(single, "proxy_migrations"), counter(single, "sleeping_owner_enqueues"), counter(single, "proxy_deactivations"))
	}
	if counter(full, "proxy_migrations") == 0 {
		t.Errorf("full: no proxy migrations on this hackbench: the comparison above proves nothing")
	}
	b := single["bench"].(map[string]any)
	if b["bench"] != "hackbench" || b["finished"] != true || b["requests"].(float64) != 2*4*4*4 {
		t.Errorf("bench figures %v", b)
	}
}
