// Command mutate is mutation testing on demand (not in CI): it applies
// small, deliberate mistakes to the protocol code one at a time, builds
// proxysim with each, runs a short `proxysim stress` against it, and
// prints which mistakes the checks caught (killed) and which ran clean
// (survived), and the mutation score.
//
//	go run ./scripts/mutate [-list scripts/mutate/mutations.txt] [-duration 20s] [-race] [-src .] [-only ID,ID] [-stress-args "--proxy-exec off"] [-check]
//
// The source tree is copied to a temporary directory, so the work tree is
// never touched. A mutation whose original text is not found exactly once
// is reported as stale (the code moved on; update the list) and does not
// count; one that does not build does not count either.
//
// The list has one mutation per block:
//
//	== ID file
//	# what the mistake is
//	<<<
//	original text (exact, tabs included)
//	---
//	replacement text
//	>>>
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

type mutation struct {
	id, file, what string
	from, to       string
}

func parseList(path string) ([]mutation, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []mutation
	var cur *mutation
	var buf []string
	state := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case state == "" && strings.HasPrefix(l, "== "):
			f := strings.Fields(l[3:])
			if len(f) != 2 {
				return nil, fmt.Errorf("%s:%d: want '== ID file'", path, n)
			}
			out = append(out, mutation{id: f[0], file: f[1]})
			cur = &out[len(out)-1]
		case state == "" && strings.HasPrefix(l, "# ") && cur != nil:
			cur.what = strings.TrimSpace(cur.what + " " + l[2:])
		case state == "" && l == "<<<" && cur != nil:
			state, buf = "from", nil
		case state == "from" && l == "---":
			cur.from, state, buf = strings.Join(buf, "\n")+"\n", "to", nil
		case state == "to" && l == ">>>":
			cur.to, state = strings.Join(buf, "\n")+"\n", ""
			if len(buf) == 0 {
				cur.to = ""
			}
		case state != "":
			buf = append(buf, l)
		case strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#"):
		default:
			return nil, fmt.Errorf("%s:%d: unexpected %q", path, n, l)
		}
	}
	if state != "" {
		return nil, fmt.Errorf("%s: unterminated block", path)
	}
	return out, sc.Err()
}

// copyTree copies the Go module at src to dst (no .git, no binaries).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !strings.HasSuffix(p, ".go") && d.Name() != "go.mod" && d.Name() != "go.sum" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

func main() {
	list := flag.String("list", "scripts/mutate/mutations.txt", "mutation list")
	src := flag.String("src", ".", "module root to mutate (copied; never modified)")
	dur := flag.Duration("duration", 20*time.Second, "wall-clock length of each stress run")
	race := flag.Bool("race", false, "build with -race (GORACE=halt_on_error=1: a data race kills the mutant)")
	cpus := flag.Int("cpus", 256, "simulated CPUs of each stress run")
	seed := flag.Uint64("seed", 1, "stress seed")
	only := flag.String("only", "", "comma-separated mutation ids to run (default: all)")
	extra := flag.String("stress-args", "", "more proxysim stress flags, space-separated (e.g. \"--proxy-exec off\")")
	checkOnly := flag.Bool("check", false, "only check that every mutation applies to -src (its original text occurs once)")
	flag.Parse()

	ms, err := parseList(*list)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	if *checkOnly {
		bad := 0
		for _, mu := range ms {
			b, err := os.ReadFile(filepath.Join(*src, mu.file))
			if n := strings.Count(string(b), mu.from); err != nil || n != 1 {
				fmt.Printf("%-6s STALE %s: original text found %d times (%v)\n", mu.id, mu.file, n, err)
				bad++
			}
		}
		fmt.Printf("%d mutations, %d stale\n", len(ms), bad)
		if bad > 0 {
			os.Exit(1)
		}
		return
	}
	want := map[string]bool{}
	for _, id := range strings.Split(*only, ",") {
		if id != "" {
			want[id] = true
		}
	}
	tmp, err := os.MkdirTemp("", "proxysim-mutate-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "src")
	if err := copyTree(*src, tree); err != nil {
		fmt.Fprintln(os.Stderr, "mutate: copy:", err)
		os.Exit(2)
	}
	bin := filepath.Join(tmp, "proxysim")
	var killed, survived, skipped int
	var survivors []string
	start := time.Now()
	for _, mu := range ms {
		if len(want) > 0 && !want[mu.id] {
			continue
		}
		path := filepath.Join(tree, mu.file)
		orig, err := os.ReadFile(path)
		if err != nil {
			fmt.Printf("%-6s STALE     %s: %v\n", mu.id, mu.file, err)
			skipped++
			continue
		}
		if n := strings.Count(string(orig), mu.from); n != 1 {
			fmt.Printf("%-6s STALE     %s: original text found %d times (want 1)\n", mu.id, mu.file, n)
			skipped++
			continue
		}
		mutated := strings.Replace(string(orig), mu.from, mu.to, 1)
		if err := os.WriteFile(path, []byte(mutated), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mutate:", err)
			os.Exit(2)
		}
		verdict, detail := runOne(tree, bin, *race, *dur, *cpus, *seed, strings.Fields(*extra))
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "mutate: restore:", err)
			os.Exit(2)
		}
		switch verdict {
		case "KILLED":
			killed++
		case "SURVIVED":
			survived++
			survivors = append(survivors, fmt.Sprintf("%s (%s): %s", mu.id, mu.file, mu.what))
		default:
			skipped++
		}
		fmt.Printf("%-6s %-9s %-28s %s\n", mu.id, verdict, mu.file, detail)
	}
	total := killed + survived
	score := 0.0
	if total > 0 {
		score = 100 * float64(killed) / float64(total)
	}
	mode := "no -race"
	if *race {
		mode = "-race"
	}
	if *extra != "" {
		mode += ", " + *extra
	}
	fmt.Printf("\nmutation score: %d/%d killed (%.0f%%), %d not counted (stale or not building); stress %v per mutant at %d CPUs, %s; %v in all\n",
		killed, total, score, skipped, *dur, *cpus, mode, time.Since(start).Round(time.Second))
	for _, s := range survivors {
		fmt.Println("  survivor:", s)
	}
}

// runOne builds the mutated tree and runs a short stress against it.
func runOne(tree, bin string, race bool, dur time.Duration, cpus int, seed uint64, extra []string) (string, string) {
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/proxysim")
	b := exec.Command("go", args...)
	b.Dir = tree
	if out, err := b.CombinedOutput(); err != nil {
		return "NOBUILD", firstLine(string(out))
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur+2*time.Minute)
	defer cancel()
	rep := filepath.Join(filepath.Dir(bin), "report.txt")
	os.Remove(rep)
	args = append([]string{"stress", "--cpus", fmt.Sprint(cpus), "--seed", fmt.Sprint(seed),
		"--duration", dur.String(), "--stat-interval", "0", "--retry-deterministic", "0", "--report", rep, "--log-level", "error"}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	el := time.Since(t0).Round(100 * time.Millisecond)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "SURVIVED", fmt.Sprintf("clean for %v", el)
	case errors.As(err, &ee):
		return "KILLED", fmt.Sprintf("after %v: %s", el, why(out.String()))
	default:
		return "ERROR", err.Error()
	}
}

func why(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "WARNING: DATA RACE") {
			return "data race"
		}
		if i := strings.Index(l, "stopped: "); i >= 0 {
			return trim(l[i+len("stopped: "):])
		}
	}
	return trim(firstLine(out))
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return trim(s)
}

func trim(s string) string {
	if len(s) > 110 {
		return s[:110] + "..."
	}
	return s
}
