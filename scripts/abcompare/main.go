// Command abcompare sets proxysim's A/B tables beside the proxy-execution
// series' test reports: for every case of the reports whose difference
// exceeds its coefficient of variation, the report's figure, proxysim's
// for the same benchmark, case and pair of configurations, and whether
// the two agree in sign; where they do not, what proxysim's counts say
// about why.
//
//	go run ./scripts/abcompare -run [-results DIR] [-seeds 5] [-cpus 32] [-jobs N] [-write docs/benchmarks.md]
//	go run ./scripts/abcompare [-results DIR] [-write docs/benchmarks.md]
//
// With -run it builds proxysim into DIR, runs every matrix of the plan
// (proxysim ab ... --out DIR/NAME.json, resumed from what the file
// holds) and keeps each matrix's text table in DIR/NAME.txt; without it,
// it reads the results files a previous -run left. It prints the
// comparison (Markdown: the date, the machine, the exact commands, the
// table, the agreement), or with -write replaces the part of FILE between
// the markers "<!-- abcompare:begin -->" and "<!-- abcompare:end -->" with
// it, and the part between "<!-- abtables:begin -->" and
// "<!-- abtables:end -->" with the matrices' tables.
//
// The reports' figures are data (reports.tsv), transcribed from the
// mailing-list threads kept in /work/shared/seeds, each with its file and
// line.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proxysim/proxysim/internal/ab"
	"github.com/proxysim/proxysim/internal/sim"
)

// reportRow is one transcribed cell of a report: a configuration's figure
// in one case of one test, and the baseline's CV on the same line.
type reportRow struct {
	Report, File string
	Line         int
	Test         string
	Case         int
	Config       string
	Ratio, Pct   float64
	CV, BaseCV   float64
}

// beyondCV says whether the report's difference exceeds its noise: the
// percent improvement is larger than both the configuration's and the
// baseline's coefficient of variation.
func (r reportRow) beyondCV() bool { return math.Abs(r.Pct) > math.Max(r.CV, r.BaseCV) }

// configMap maps a report's configuration to proxysim's (the baseline,
// tip, is off in every report):
//   - v18's proxy_exec is tip plus the posted single-runqueue series:
//     single-rq;
//   - v9's proxy_exec_v9 is tip plus the whole v9 series: full;
//   - v21's proxy-v21 is tip plus the posted "Donor Migration" part
//     (proxy and return migration, blocked_donor, chain migration) on
//     top of the merged single-runqueue part, without sleeping-owner
//     handling: full+no-sleeping-owners;
//   - v21's proxy-full is the whole v21 series (on its own base, not
//     tip's: the report says so): full.
var configMap = map[string]string{
	"proxy_exec":    "single-rq",
	"proxy_exec_v9": "full",
	"proxy-v21":     "full+no-sleeping-owners",
	"proxy-full":    "full",
}

// testMap maps a report's test to proxysim's matrices (more than one when
// the report does not say the mode: hackbench over pipes and over
// sockets) and metric. The reports' "schbench" is the old schbench
// (before v1.0): proxysim's schbench is v1.x, and its wake-up p99 stands
// in for the old one's.
var testMap = map[string]struct {
	matrices []string
	metric   string
}{
	"hackbench":                        {[]string{"hackbench-pipe", "hackbench-socket"}, "time"},
	"tbench":                           {[]string{"tbench"}, "throughput"},
	"netperf":                          {[]string{"netperf"}, "throughput"},
	"schbench":                         {[]string{"schbench"}, "wakeup_p99"},
	"new-schbench-wakeup-latency":      {[]string{"schbench"}, "wakeup_p99"},
	"new-schbench-request-latency":     {[]string{"schbench"}, "request_p99"},
	"new-schbench-requests-per-second": {[]string{"schbench"}, "rps"},
}

// matrix is one `proxysim ab` run of the plan.
type matrix struct {
	name  string
	bench string
	args  []string
}

// configs are every configuration the reports need, off first.
const configs = "off;single-rq;full;full+no-sleeping-owners"

// plan lists the matrices: the reports' cases of each benchmark, the
// inversion benchmark (which no report has) at its defaults.
func plan(seeds, cpus int) []matrix {
	common := []string{"--configs", configs, "--seeds", strconv.Itoa(seeds), "--cpus", strconv.Itoa(cpus)}
	m := func(name, bench string, args ...string) matrix {
		return matrix{name, bench, append(args, common...)}
	}
	return []matrix{
		m("hackbench-pipe", "hackbench", "--workload", "hackbench:pipe=1", "--cases", "1,2,4,8,16"),
		m("hackbench-socket", "hackbench", "--workload", "hackbench", "--cases", "1,2,4,8,16"),
		m("tbench", "tbench", "--workload", "tbench", "--cases", "1,2,4,8,16,32,64,128,256,512,1024"),
		m("netperf", "netperf", "--workload", "netperf", "--cases", "1,2,4,8,16,32,64,128,256,512"),
		m("schbench", "schbench", "--workload", "schbench", "--cases", "1,2,4,8,16,32,64,128,256,512"),
		{"inversion", "inversion", []string{"--workload", "inversion", "--seeds", strconv.Itoa(seeds), "--cpus", strconv.Itoa(cpus)}},
	}
}

func readReports(path string) ([]reportRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []reportRow
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Split(line, "\t")
		if len(fs) != 10 {
			return nil, fmt.Errorf("%s:%d: %d fields, want 10", path, n, len(fs))
		}
		var r reportRow
		r.Report, r.File, r.Test, r.Config = fs[0], fs[1], fs[3], fs[5]
		var errs [6]error
		r.Line, errs[0] = strconv.Atoi(fs[2])
		r.Case, errs[1] = strconv.Atoi(fs[4])
		r.Ratio, errs[2] = strconv.ParseFloat(fs[6], 64)
		r.Pct, errs[3] = strconv.ParseFloat(fs[7], 64)
		r.CV, errs[4] = strconv.ParseFloat(fs[8], 64)
		r.BaseCV, errs[5] = strconv.ParseFloat(fs[9], 64)
		for _, e := range errs {
			if e != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, n, e)
			}
		}
		if _, ok := configMap[r.Config]; !ok {
			return nil, fmt.Errorf("%s:%d: configuration %q has no proxysim mapping", path, n, r.Config)
		}
		if _, ok := testMap[r.Test]; !ok {
			return nil, fmt.Errorf("%s:%d: test %q has no proxysim mapping", path, n, r.Test)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// simCell is proxysim's figure for one case and configuration.
type simCell struct {
	found         bool
	ratio, pct    float64
	cv, baseCV    float64
	waitsPerOp    float64 // mutex waiters queued per operation, the configuration's
	baseWaitsOp   float64 // the same for off
	proxyPerOp    float64 // proxies, proxy migrations and deactivations per operation
	identicalRuns bool    // every seed ran the same schedule as off's (trace hashes)
}

// differs says whether proxysim's difference is beyond its own noise.
func (c simCell) differs() bool {
	return c.found && math.Abs(c.pct) >= 0.1 && math.Abs(c.pct) > math.Max(c.cv, c.baseCV)
}

type tables map[string]*ab.File

func loadResults(dir string, ms []matrix) (tables, error) {
	t := tables{}
	for _, m := range ms {
		f, err := ab.ReadFile(filepath.Join(dir, m.name+".json"))
		if err != nil {
			return nil, err
		}
		if f != nil {
			t[m.name] = f
		}
	}
	return t, nil
}

// cell reads proxysim's figure of matrix name, metric, case and
// configuration, against off.
func (t tables) cell(name, metric string, c int, config string) simCell {
	f := t[name]
	if f == nil {
		return simCell{}
	}
	m, err := ab.FindMetric(f.Spec.Bench, metric)
	if err != nil {
		return simCell{}
	}
	tb := ab.Build(f, m, m.Stat, ab.Cost{})
	for _, r := range tb.Rows {
		if r.Case != c {
			continue
		}
		var base, x *ab.Cell
		for i := range r.Cells {
			switch r.Cells[i].Config {
			case "off":
				base = &r.Cells[i]
			case config:
				x = &r.Cells[i]
			}
		}
		if base == nil || x == nil || len(x.Values) == 0 || len(base.Values) == 0 {
			return simCell{}
		}
		out := simCell{found: true, cv: x.CV, baseCV: base.CV,
			waitsPerOp: x.PerOp["mutex_contentions"], baseWaitsOp: base.PerOp["mutex_contentions"],
			proxyPerOp: x.PerOp["proxy_pick_same_rq"] + x.PerOp["proxy_migrations"] + x.PerOp["proxy_deactivations"]}
		out.ratio, out.pct = ab.Compare(x.Stat, base.Stat, m.HigherBetter)
		out.identicalRuns = sameHashes(f, c, "off", config)
		return out
	}
	return simCell{}
}

// sameHashes says whether every seed of config ran the schedule off's
// run of the same seed ran.
func sameHashes(f *ab.File, c int, a, b string) bool {
	done := f.Done()
	n := 0
	for i := 0; i < f.Spec.Seeds; i++ {
		s := f.Spec.FirstSeed + uint64(i)
		x, y := done[ab.Job{Case: c, Config: a, Seed: s}], done[ab.Job{Case: c, Config: b, Seed: s}]
		if x == nil || y == nil || x.TraceHash == "" || x.TraceHash != y.TraceHash {
			return false
		}
		n++
	}
	return n > 0
}

// verdict is a row's outcome and the reason proxysim's counts give.
func verdict(r reportRow, c simCell) (string, string) {
	if !c.found {
		return "not run", "no proxysim result for this case"
	}
	if !c.differs() {
		switch {
		case c.identicalRuns:
			return "disagree (1.00)", "no mutex waiter on this path: every seed ran off's schedule, proxy execution never engaged"
		case c.waitsPerOp == 0 && c.proxyPerOp == 0:
			return "disagree (noise)", "no mutex waiter: proxy execution never engaged; the difference is scheduling noise"
		default:
			return "disagree (noise)", fmt.Sprintf("proxy execution engaged (%.4f waiters queued, %.4f proxy events per op) but moved the figure less than its CV", c.waitsPerOp, c.proxyPerOp)
		}
	}
	if (c.pct > 0) == (r.Pct > 0) {
		return "agree", ""
	}
	if c.pct > 0 {
		return "disagree (sign)", fmt.Sprintf("proxysim gains: %.4f waiters queued per op; the series' costs it charges are smaller than what it saves by running owners", c.waitsPerOp)
	}
	return "disagree (sign)", fmt.Sprintf("proxysim loses: %.4f waiters queued, %.4f proxy events per op", c.waitsPerOp, c.proxyPerOp)
}

func cellText(ratio, pct, cv float64) string {
	return fmt.Sprintf("%.2f [%.2f](%.2f)", ratio, pct, cv)
}

// compare writes the comparison's Markdown.
func compare(w io.Writer, rows []reportRow, t tables, header string) error {
	type tally struct{ beyond, agree, notRun int }
	byTest := map[string]*tally{}
	var all tally
	var b strings.Builder
	fmt.Fprintf(&b, "| report (file:line) | test | case | configuration (proxysim) | report [pct imp](CV), tip's CV | proxysim [pct imp](CV) | sign | why (proxysim's counts) |\n")
	fmt.Fprintf(&b, "| --- | --- | ---: | --- | --- | --- | --- | --- |\n")
	for _, r := range rows {
		if !r.beyondCV() {
			continue
		}
		tm := testMap[r.Test]
		cfg := configMap[r.Config]
		for _, mx := range tm.matrices {
			key := r.Test
			if len(tm.matrices) > 1 {
				key += " (" + strings.TrimPrefix(mx, r.Test+"-") + ")"
			}
			tl := byTest[key]
			if tl == nil {
				tl = &tally{}
				byTest[key] = tl
			}
			c := t.cell(mx, tm.metric, r.Case, cfg)
			v, why := verdict(r, c)
			tl.beyond++
			all.beyond++
			switch {
			case v == "agree":
				tl.agree++
				all.agree++
			case v == "not run":
				tl.notRun++
				all.notRun++
			}
			sim := "--"
			if c.found {
				sim = cellText(c.ratio, c.pct, c.cv)
			}
			fmt.Fprintf(&b, "| %s (%s:%d) | %s | %d | %s (%s) | %s, %.2f | %s | %s | %s |\n",
				r.Report, r.File, r.Line, key, r.Case, r.Config, cfg, cellText(r.Ratio, r.Pct, r.CV), r.BaseCV, sim, v, why)
		}
	}
	fmt.Fprint(w, header)
	fmt.Fprintf(w, "Agreement: proxysim's difference has the report's sign in **%d of %d** comparisons of report cells beyond their CV", all.agree, all.beyond)
	if all.notRun > 0 {
		fmt.Fprintf(w, " (%d without a proxysim result)", all.notRun)
	}
	fmt.Fprintf(w, ".\n\n| test | beyond CV | agree |\n| --- | ---: | ---: |\n")
	var keys []string
	for k := range byTest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "| %s | %d | %d |\n", k, byTest[k].beyond, byTest[k].agree)
	}
	fmt.Fprintf(w, "\n%s", b.String())
	return nil
}

// machine describes where the comparison was made: the date, the host,
// and the commit the matrices were run with (DIR/commit.txt, written by
// -run).
func machine(dir string, commands []string) string {
	run := func(name string, args ...string) string {
		out, err := exec.Command(name, args...).Output()
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return strings.TrimSpace(string(out))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Generated %s by `go run ./scripts/abcompare -run`.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	commit := "(unknown: no commit.txt in the results directory)"
	if c, err := os.ReadFile(filepath.Join(dir, "commit.txt")); err == nil {
		commit = strings.TrimSpace(string(c))
	}
	fmt.Fprintf(&b, "- `uname -a`: %s\n- `nproc`: %s\n- `go version`: %s\n- proxysim built from: %s\n\n", run("uname", "-a"), run("nproc"), run("go", "version"), commit)
	fmt.Fprintf(&b, "Commands:\n\n```sh\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "%s\n", c)
	}
	fmt.Fprintf(&b, "```\n\n")
	return b.String()
}

func commandLine(m matrix, dir string) string {
	q := func(s string) string {
		if strings.ContainsAny(s, ";+ ") {
			return "'" + s + "'"
		}
		return s
	}
	parts := []string{"proxysim", "ab"}
	for _, a := range m.args {
		parts = append(parts, q(a))
	}
	parts = append(parts, "--out", filepath.Join(dir, m.name+".json"))
	return strings.Join(parts, " ")
}

// replaceSection puts text between the markers "<!-- NAME:begin -->"
// and "<!-- NAME:end -->" of file.
func replaceSection(path, name, text string) error {
	begin, end := "<!-- "+name+":begin -->", "<!-- "+name+":end -->"
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	i, j := bytes.Index(b, []byte(begin)), bytes.Index(b, []byte(end))
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s section", path, begin, end)
	}
	out := append([]byte{}, b[:i+len(begin)]...)
	out = append(out, '\n')
	out = append(out, text...)
	out = append(out, b[j:]...)
	return sim.WriteFileAtomic(path, func(w io.Writer) error { _, err := w.Write(out); return err })
}

// matrixTables is each matrix's text table (DIR/NAME.txt) without the
// post-hoc cost-adjusted table, in code blocks.
func matrixTables(dir string, ms []matrix) (string, error) {
	var b strings.Builder
	for _, m := range ms {
		txt, err := os.ReadFile(filepath.Join(dir, m.name+".txt"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return "", err
		}
		s := string(txt)
		if i := strings.Index(s, "\nCost-adjusted"); i >= 0 {
			if j := strings.Index(s[i+1:], "\n\n"); j >= 0 {
				s = s[:i] + s[i+1+j:]
			}
		}
		fmt.Fprintf(&b, "`%s`:\n\n```\n%s\n```\n\n", m.name, strings.TrimSpace(s))
	}
	return b.String(), nil
}

func main() {
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}

// cli runs abcompare with args: 0 done, 2 a usage or input error (one
// line on stderr).
func cli(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("abcompare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("results", "abresults", "directory of the results files (proxysim ab --out) and tables")
	run := fs.Bool("run", false, "build proxysim and run (or resume) every matrix of the plan first")
	seeds := fs.Int("seeds", 5, "seeds per case and configuration")
	cpus := fs.Int("cpus", 32, "simulated CPUs")
	jobs := fs.Int("jobs", runtime.NumCPU(), "runs in parallel")
	reports := fs.String("reports", "scripts/abcompare/reports.tsv", "the reports' transcribed figures")
	write := fs.String("write", "", "replace the abcompare section of this file instead of printing")
	fail := func(err error) int {
		fmt.Fprintf(stderr, "abcompare: %v\n", err)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Fprintf(stdout, "Usage: go run ./scripts/abcompare [-run] [flags]\n\nproxysim's A/B figures beside the proxy-execution series' reports (docs/benchmarks.md).\n\nFlags:\n")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		return fail(err)
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *seeds < 1 || *cpus < 1 || *jobs < 1 {
		return fail(fmt.Errorf("-seeds, -cpus and -jobs must be at least 1"))
	}
	if !*run {
		if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
			return fail(fmt.Errorf("-results %s: no such directory (make it with -run)", *dir))
		}
	}
	if err := mainErr(*dir, *run, *seeds, *cpus, *jobs, *reports, *write); err != nil {
		return fail(err)
	}
	return 0
}

func mainErr(dir string, run bool, seeds, cpus, jobs int, reports, write string) error {
	rows, err := readReports(reports)
	if err != nil {
		return err
	}
	ms := plan(seeds, cpus)
	var commands []string
	for _, m := range ms {
		commands = append(commands, commandLine(m, dir))
	}
	if run {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		bin, err := filepath.Abs(filepath.Join(dir, "proxysim"))
		if err != nil {
			return err
		}
		rev, err := exec.Command("git", "describe", "--always", "--dirty").Output()
		if err != nil {
			return fmt.Errorf("git describe: %v", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "commit.txt"), rev, 0o644); err != nil {
			return err
		}
		build := exec.Command("go", "build", "-o", bin, "./cmd/proxysim")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build: %v", err)
		}
		for _, m := range ms {
			args := append([]string{"ab"}, m.args...)
			args = append(args, "--out", filepath.Join(dir, m.name+".json"), "--jobs", strconv.Itoa(jobs))
			fmt.Fprintf(os.Stderr, "abcompare: %s\n", commandLine(m, dir))
			cmd := exec.Command(bin, args...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s: %v", m.name, err)
			}
			if err := sim.WriteFileAtomic(filepath.Join(dir, m.name+".txt"), func(w io.Writer) error { _, err := w.Write(out.Bytes()); return err }); err != nil {
				return err
			}
		}
	}
	t, err := loadResults(dir, ms)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := compare(&b, rows, t, machine(dir, commands)); err != nil {
		return err
	}
	if write != "" {
		tabs, err := matrixTables(dir, ms)
		if err != nil {
			return err
		}
		if err := replaceSection(write, "abtables", tabs); err != nil {
			return err
		}
		return replaceSection(write, "abcompare", b.String())
	}
	_, err = os.Stdout.Write(b.Bytes())
	return err
}
