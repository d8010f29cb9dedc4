package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/explain"
	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/workload"
)

// A failure's directory: everything a failing stress or explore run
// produced, in one place, one directory per distinct failure under
// --failures (default proxysim-failures):
//
//	failure.json        the signature, how often it was met, the seeds and commands
//	report.txt          the failure report (explanation first)
//	det.report          the deterministic reproduction's report (if any)
//	scenario.json       the reproduction's scenario, with reproduce.txt: the command that runs it
//	explain.txt / .md   the explanation of the smallest reproducer
//	shrunk.json         the shrunk scenario, with shrunk.txt: the command that runs it
//	slice.json          a Perfetto trace of the explained window (ui.perfetto.dev)
//
// Failures with the same signature (the same invariant broken in the same
// kernel function, explain's Signature) are the same bug met again: they
// are counted in the first one's failure.json and not written again.

// failureMeta is failure.json.
type failureMeta struct {
	Signature string   `json:"signature"`
	Invariant string   `json:"invariant"`
	Where     string   `json:"where,omitempty"`
	Catalogue string   `json:"catalogue,omitempty"`
	Count     int      `json:"count"`
	Seeds     []uint64 `json:"seeds"`
	Commands  []string `json:"commands"`
	FirstSeen string   `json:"first_seen"`
	LastSeen  string   `json:"last_seen"`
	Files     []string `json:"files"`
}

// failure is what a failing run hands recordFailure.
type failure struct {
	seed    uint64
	cmdline string // the run's reproduce line
	report  string // its report file
	bugs    bugs.Set
	// The deterministic reproduction, if there is one: its report, the
	// options and scenario loader that rerun it, its command.
	det     string
	detOpts sim.Options
	load    func() (*workload.Scenario, error)
	// ex and run: the reproduction's explanation and its watched run (for
	// the Perfetto slice); ex is coarse (events only) without one.
	ex  *explain.Explanation
	run *sim.Run
}

// failureSink writes failure directories.
type failureSink struct {
	root         string        // --failures ("" : none)
	shrinkBudget time.Duration // --shrink-budget (0: no shrink)
	stderr       io.Writer
	// stop, once closed (a signal), ends a shrink at once with the
	// smallest failing scenario so far.
	stop     chan struct{}
	stopOnce sync.Once
}

// interrupt ends a shrink in progress (SIGINT while the failure is being
// filed).
func (fs *failureSink) interrupt() {
	fs.stopOnce.Do(func() { close(fs.stop) })
}

// register adds --failures and --shrink-budget.
func (fs *failureSink) register(f *flag.FlagSet) {
	fs.stop = make(chan struct{})
	f.StringVar(&fs.root, "failures", "proxysim-failures", "write everything a failure produced (report, explanation, deterministic and shrunk reproducers, Perfetto slice) into a directory per distinct failure under this one, and count repeats there (\"\": don't)")
	f.DurationVar(&fs.shrinkBudget, "shrink-budget", 60*time.Second, "wall time to shrink a failure's deterministic reproduction into its directory (0: don't shrink)")
}

// file records the failure of run r (summary s) with its deterministic
// reproduction rep (nil: none) and prints the directory's path.
func (fs *failureSink) file(r *sim.Run, s *sim.Summary, rep *reproduction, mf *machineFlags, cmdline string, stderr io.Writer) {
	if fs.root == "" || !s.Failed() {
		return
	}
	fs.stderr = stderr
	f := &failure{seed: mf.o.Seed, cmdline: cmdline, report: mf.report, bugs: mf.o.Bugs}
	if rep != nil && rep.ex != nil {
		f.det, f.detOpts, f.load, f.ex, f.run = rep.path, rep.opts, rep.load, rep.ex, rep.run
		if f.det == f.report {
			f.det = "" // a deterministic run's own report
		}
	} else {
		f.ex = r.ExplainEvents(s.Violations[0], 30)
	}
	dir, err := fs.record(f)
	if err != nil {
		fmt.Fprintf(stderr, "proxysim: cannot write the failure's directory: %v\n", err)
		return
	}
	fmt.Fprintf(stderr, "proxysim: everything about this failure: %s\n", dir)
}

var slugRE = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// dirFor names the directory of a signature.
func (fs *failureSink) dirFor(sig string) string {
	s := strings.ReplaceAll(sig, "@", "-at-")
	s = strings.ReplaceAll(s, ">", "-")
	return filepath.Join(fs.root, strings.Trim(slugRE.ReplaceAllString(s, "_"), "_"))
}

// record files a failure: a new directory for a new signature, a count
// for one met before. It returns the directory.
func (fs *failureSink) record(f *failure) (string, error) {
	if fs.root == "" {
		return "", nil
	}
	sig := f.ex.Signature()
	dir := fs.dirFor(sig)
	now := time.Now().UTC().Format(time.RFC3339)
	metaPath := filepath.Join(dir, "failure.json")
	if b, err := os.ReadFile(metaPath); err == nil {
		var m failureMeta
		if json.Unmarshal(b, &m) == nil && m.Signature == sig {
			m.Count++
			m.Seeds = append(m.Seeds, f.seed)
			m.Commands = append(m.Commands, f.cmdline)
			m.LastSeen = now
			if err := writeJSONFile(metaPath, &m); err != nil {
				return "", err
			}
			fmt.Fprintf(fs.stderr, "proxysim: the same failure as %s (%s), met %d times: not written again\n", dir, sig, m.Count)
			return dir, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	m := failureMeta{Signature: sig, Invariant: f.ex.Failure.Name, Where: f.ex.Where, Count: 1,
		Seeds: []uint64{f.seed}, Commands: []string{f.cmdline}, FirstSeen: now, LastSeen: now}
	if e := matchCatalogue(sig, f.bugs); e != "" {
		m.Catalogue = e
	}
	add := func(name string, write func(w io.Writer) error) {
		if err := sim.WriteFileAtomic(filepath.Join(dir, name), write); err != nil {
			fmt.Fprintf(fs.stderr, "proxysim: %v\n", err)
			return
		}
		m.Files = append(m.Files, name)
	}
	copyFile := func(name, from string) {
		if from == "" {
			return
		}
		b, err := os.ReadFile(from)
		if err != nil {
			return
		}
		add(name, func(w io.Writer) error { _, err := w.Write(b); return err })
	}
	copyFile("report.txt", f.report)
	copyFile("det.report", f.det)
	ex, run := f.ex, f.run
	if f.load != nil {
		if sc, err := f.load(); err == nil {
			if data, err := workload.Encode(sc); err == nil {
				add("scenario.json", func(w io.Writer) error { _, err := w.Write(data); return err })
				add("reproduce.txt", func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "%s\n", rerunWithScenario(f.detOpts, "scenario.json", f.detOpts.Seed, f.bugs))
					return err
				})
			}
		}
		if fs.shrinkBudget > 0 {
			if sex, srun := fs.shrink(f, dir, add); sex != nil {
				ex, run = sex, srun
			}
		}
	}
	add("explain.txt", func(w io.Writer) error { ex.WriteText(w, 100); return nil })
	add("explain.md", func(w io.Writer) error { ex.WriteMarkdown(w); return nil })
	if run != nil && !ex.Coarse {
		add("slice.json", func(w io.Writer) error {
			return run.WriteSlicePerfetto(w, ex, map[string]string{"signature": sig, "command": f.cmdline})
		})
	}
	m.Files = append(m.Files, "failure.json")
	if err := writeJSONFile(metaPath, &m); err != nil {
		return "", err
	}
	if m.Catalogue != "" {
		fmt.Fprintf(fs.stderr, "proxysim: this is %s\n", catalogueNote(m.Catalogue))
	}
	return dir, nil
}

// shrink shrinks the deterministic reproduction within the sink's budget,
// writes the shrunk scenario and its command, and returns the shrunk
// run's explanation (nil if nothing smaller failed the same way).
func (fs *failureSink) shrink(f *failure, dir string, add func(string, func(io.Writer) error)) (*explain.Explanation, *sim.Run) {
	sc, err := f.load()
	if err != nil {
		return nil, nil
	}
	start := time.Now()
	res, err := sim.Shrink(f.detOpts, sc, f.ex.Failure.Name, sim.ShrinkOptions{Budget: fs.shrinkBudget, Seeds: 4, Stop: fs.stop})
	if err != nil || res.Scenario == nil {
		return nil, nil
	}
	small := res.Scenario
	small.Name = sc.Name + "-shrunk"
	data, err := workload.Encode(small)
	if err != nil {
		return nil, nil
	}
	add("shrunk.json", func(w io.Writer) error { _, err := w.Write(data); return err })
	// the shrunk case's options: its seed, strategy, sim time and the
	// stress injectors the shrink turned off
	o := res.Options
	add("shrunk.txt", func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s\n# %v, shrunk from %v in %v (%d candidate runs)\n", rerunWithScenario(o, "shrunk.json", res.Seed, f.bugs)+strings.Join(append([]string{""}, injectorFlags(&f.detOpts, &o)...), " "),
			sim.SizeOf(small, small.CPUs), sim.SizeOf(sc, max(sc.CPUs, f.detOpts.CPUs)), time.Since(start).Round(time.Millisecond), res.Tries)
		return err
	})
	fmt.Fprintf(fs.stderr, "proxysim: shrunk to %v in %v\n", sim.SizeOf(small, small.CPUs), time.Since(start).Round(time.Millisecond))
	o.CPUs, o.Topology = small.CPUs, small.Topology
	r, s, w, err := sim.RunWatched(o, small, sim.DefaultWatchSteps)
	if err != nil || !s.Failed() {
		return nil, nil
	}
	return r.Explain(w, s.Violations[0], explain.Options{MaxRows: 30}), r
}

// rerunWithScenario is the command that runs a scenario file
// deterministically with o's mode, strategy, time and bugs.
func rerunWithScenario(o sim.Options, file string, seed uint64, b bugs.Set) string {
	parts := []string{"proxysim", "stress", "--deterministic", "--strategy", o.Strategy, "--duration", "0",
		"--sim-time", o.SimTime.String(), "--workload", shellQuote(file), "--seed", fmt.Sprint(seed)}
	for _, n := range b.Names() {
		parts = append(parts, "--bug", n)
	}
	return strings.Join(parts, " ")
}

func writeJSONFile(path string, v any) error {
	return sim.WriteFileAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	})
}

// matchCatalogue names the catalogue entry a failure's signature belongs
// to: one of the bugs switched on whose known signatures include it, or
// else any entry's ("" if none).
func matchCatalogue(sig string, on bugs.Set) string {
	var any string
	for _, e := range bugs.Catalogue {
		for _, s := range bugs.SignaturesOf(e.Name) {
			if s != sig {
				continue
			}
			if on.Has(e.ID) {
				return e.Name
			}
			if any == "" {
				any = e.Name
			}
		}
	}
	return any
}

// catalogueNote says what a catalogue entry is, for a failure that
// matches it.
func catalogueNote(name string) string {
	e, ok := bugs.Lookup(name)
	if !ok {
		return "`" + name + "`"
	}
	if f := bugs.FindingOf(name); f != "" {
		return fmt.Sprintf("`%s`, finding %s: see %s", name, f, bugs.FindingDoc(name))
	}
	return fmt.Sprintf("`%s` (%s, fixed in %s: proxysim bugs)", name, e.Kind, e.FixedIn)
}
