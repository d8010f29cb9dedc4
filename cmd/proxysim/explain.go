package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/proxysim/proxysim/internal/explain"
	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/trace"
	"github.com/proxysim/proxysim/internal/workload"
)

const explainUsage = `Usage: proxysim explain REPORT [flags]

Explains a failure the way a race is explained on the mailing list: one
column per CPU, one row per step that matters (a kernel function, the locks
its CPU holds, what it reads and writes), then what broke.

It replays the deterministic run the report records with every lock step
and every read and write of the protocol's state watched, and slices the
steps down to those the broken invariant depends on. A report of a
concurrent run is explained through its deterministic reproduction
(REPORT's .det.report beside it, which stress writes when a deterministic
strategy reproduces the failure).

Exit codes: 0 explained, 1 the replay did not fail, 2 usage or unreadable
report, 3 internal error.

Flags:
`

// explainFlags are explain's flags.
type explainFlags struct {
	json, markdown        bool
	width, maxRows, steps int
}

// common points the common flags at f's storage.
func (f *explainFlags) common() commonFlags { return commonFlags{json: &f.json} }

// newExplainFlags is explain's flag set.
func newExplainFlags() (*flag.FlagSet, *explainFlags) {
	fs := newFlagSet("explain")
	f := &explainFlags{}
	f.common().register(fs, map[string]string{"json": "the rows, the CPUs, the counts and the plain text"})
	fs.IntVar(&f.width, "width", 100, "columns of the plain-text diagram (a mail: 80 or 100)")
	fs.BoolVar(&f.markdown, "markdown", false, "write Markdown (a table, a column per CPU) instead of plain text")
	fs.IntVar(&f.maxRows, "max-rows", 30, "cut the slice (nearest steps kept) until it fits this many rows (0: no limit)")
	fs.IntVar(&f.steps, "steps", 0, "print the last N watched steps of the replay instead of the diagram")
	return fs, f
}

func cmdExplain(args []string, stdout, stderr io.Writer) (int, error) {
	fs, ef := newExplainFlags()
	width, markdown, asJSON, maxRows, steps := &ef.width, &ef.markdown, &ef.json, &ef.maxRows, &ef.steps
	path, err := reportArg(fs, args, explainUsage, stdout)
	if err != nil {
		return 0, err
	}
	if *width < 40 || *width > 1000 {
		return 0, usagef("--width %d out of range 40-1000", *width)
	}
	if *maxRows < 0 || *steps < 0 {
		return 0, usagef("--max-rows and --steps must not be negative")
	}
	rep, err := readReport(path)
	if err != nil {
		return 0, err
	}
	if !rep.flags.o.Deterministic {
		det := deterministicReportPath(path)
		if _, err := os.Stat(det); err != nil {
			return 0, usagef("%s records a concurrent run, which does not replay event for event, and there is no deterministic reproduction of it (%s) to explain instead", path, det)
		}
		fmt.Fprintf(stderr, "proxysim explain: %s records a concurrent run: explaining its deterministic reproduction %s\n", path, det)
		if rep, err = readReport(det); err != nil {
			return 0, err
		}
		path = det
	}
	if v := rep.version(); v != "" && v != sim.Version() {
		fmt.Fprintf(stderr, "proxysim explain: %s was written by proxysim %s; this is proxysim %s (a changed model may not fail the same way)\n", path, v, sim.Version())
	}
	mf := rep.flags
	sc, err := sim.LoadScenario(mf.o.Workload, mf.o.CPUs, mf.o.Tasks)
	if err != nil {
		return 0, usageError{err.Error()}
	}
	restore := serialProcs(mf.o)
	r, s, w, err := sim.RunWatched(mf.o, sc, sim.DefaultWatchSteps)
	restore()
	if err != nil {
		return 0, usageError{err.Error()}
	}
	if *steps > 0 {
		all := w.Steps()
		if len(all) > *steps {
			all = all[len(all)-*steps:]
		}
		for _, st := range all {
			fmt.Fprintln(stdout, fmtStep(st, w, r.TaskName))
		}
		return exitOK, nil
	}
	if !s.Failed() {
		fmt.Fprintf(stdout, "the replay of %s did not fail: nothing to explain (recorded: invariant %s at event #%s; report written by proxysim %s)\n",
			path, rep.violation[3], rep.violation[1], rep.version())
		return exitViolation, nil
	}
	v := s.Violations[0]
	if v.Name != rep.violation[3] || fmt.Sprint(v.Seq) != rep.violation[1] {
		fmt.Fprintf(stderr, "proxysim explain: the replay broke invariant %s at event #%d, the report records %s at event #%s: explaining the replay's\n",
			v.Name, v.Seq, rep.violation[3], rep.violation[1])
	}
	ex := r.Explain(w, v, explain.Options{MaxRows: *maxRows})
	switch {
	case *asJSON:
		var text strings.Builder
		ex.WriteText(&text, *width)
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(explainJSON{Report: path, Invariant: v.Name, CPUs: ex.CPUs, Rows: ex.Rows,
			Before: ex.Before, Legend: ex.Legend, StepsExamined: ex.Examined, StepsKept: ex.Kept, Text: text.String()}); err != nil {
			return exitInternal, err
		}
	case *markdown:
		ex.WriteMarkdown(stdout)
	default:
		ex.WriteText(stdout, *width)
	}
	return exitOK, nil
}

// explainText replays the deterministic run o (its scenario loaded
// afresh) with a watch and returns the explanation of its first
// violation as the plain text a failure report starts with ("" if the
// replay did not fail or could not start).
func explainText(o sim.Options, load func() (*workload.Scenario, error)) string {
	return explainRepro(o, load).text()
}

// reproduction is a failure's deterministic reproduction: its report,
// how to rerun it, and its explanation (nil if the replay did not fail).
type reproduction struct {
	path string
	opts sim.Options
	load func() (*workload.Scenario, error)
	ex   *explain.Explanation
	run  *sim.Run
}

// explainRepro replays the deterministic run o with a watch and explains
// its first violation.
func explainRepro(o sim.Options, load func() (*workload.Scenario, error)) *reproduction {
	rep := &reproduction{opts: o, load: load}
	sc, err := load()
	if err != nil {
		return rep
	}
	restore := serialProcs(o)
	r, s, w, err := sim.RunWatched(o, sc, sim.DefaultWatchSteps)
	restore()
	if err != nil || !s.Failed() {
		return rep
	}
	rep.ex, rep.run = r.Explain(w, s.Violations[0], explain.Options{MaxRows: 30}), r
	return rep
}

// text is the explanation as a failure report's opening ("" if none).
func (rep *reproduction) text() string {
	if rep == nil || rep.ex == nil {
		return ""
	}
	var b strings.Builder
	rep.ex.WriteText(&b, 100)
	return b.String()
}

// rewriteReport writes a failure report again (now with its
// explanation), in place.
func rewriteReport(path string, r *sim.Run, s *sim.Summary, cmdline string, events int, stderr io.Writer) {
	if err := sim.WriteFileAtomic(path, func(w io.Writer) error {
		r.FormatReport(w, s, cmdline, events)
		return nil
	}); err != nil {
		fmt.Fprintf(stderr, "proxysim: cannot write the report: %v\n", err)
	}
}

// explainJSON is explain --json's output.
type explainJSON struct {
	Report        string        `json:"report"`
	Invariant     string        `json:"invariant"`
	CPUs          []int         `json:"cpus"`
	Rows          []explain.Row `json:"rows"`
	Before        []string      `json:"before,omitempty"`
	Legend        []string      `json:"legend"`
	StepsExamined int           `json:"steps_examined"`
	StepsKept     int           `json:"steps_kept"`
	Text          string        `json:"text"`
}

// fmtStep is one watched step for explain --steps.
func fmtStep(st trace.Step, w *trace.Watch, name func(int32) string) string {
	head := fmt.Sprintf("cpu%-3d %-60s ", st.CPU, w.Path(st.Path))
	switch st.Kind {
	case trace.StepRead, trace.StepWrite:
		op := "=="
		if st.Kind == trace.StepWrite {
			op = "="
		}
		obj := ""
		switch st.Obj {
		case trace.ObjTask:
			obj = name(st.ID)
		case trace.ObjRQ:
			obj = fmt.Sprintf("rq%d", st.ID)
		case trace.ObjMutex:
			obj = fmt.Sprintf("m%d", st.ID)
		}
		return head + fmt.Sprintf("%s->%s %s %d", obj, st.Field, op, st.Val)
	case trace.StepLock, trace.StepUnlock:
		v := "lock"
		if st.Kind == trace.StepUnlock {
			v = "unlock"
		}
		return head + fmt.Sprintf("%s class %d key %d", v, st.Class, st.ID)
	case trace.StepCheck:
		return head + fmt.Sprintf("invariant %d broken", st.Val)
	case trace.StepEvent:
		if e, ok := w.Event(&st); ok {
			return head + e.Format(name)
		}
		return head + "(event no longer held)"
	}
	return head + "?"
}
