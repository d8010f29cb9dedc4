package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/proxysim/proxysim/internal/explain"
	"github.com/proxysim/proxysim/internal/sim"
	"github.com/proxysim/proxysim/internal/trace"
)

const explainUsage = `Usage: proxysim explain REPORT [flags]

Explains a failure: replays the deterministic run a report records with
every lock step and every read and write of the protocol's state watched,
keeps the steps the broken invariant depends on, and prints them as a
CPU-column diagram in kernel terms, then what broke.

Flags:
`

func cmdExplain(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("explain", explainUsage, stderr)
	steps := fs.Int("steps", 0, "print the last N watched steps instead of the diagram (debugging)")
	width := fs.Int("width", 100, "columns of the plain-text diagram (a mail: 80 or 100)")
	markdown := fs.Bool("markdown", false, "write Markdown (a table, a column per CPU) instead of plain text")
	maxRows := fs.Int("max-rows", 30, "cut the slice until it fits this many rows (0: no limit)")
	var path string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		path, args = args[0], args[1:]
	}
	if err := parse(fs, args, explainUsage, stdout); err != nil {
		return 0, err
	}
	if path == "" && fs.NArg() == 1 {
		path = fs.Arg(0)
	} else if fs.NArg() > 0 || path == "" {
		return 0, usagef("want exactly one report file")
	}
	rep, err := readReport(path)
	if err != nil {
		return 0, err
	}
	mf := rep.flags
	sc, err := sim.LoadScenario(mf.o.Workload, mf.o.CPUs, mf.o.Tasks)
	if err != nil {
		return 0, usageError{err.Error()}
	}
	r, s, w, err := sim.RunWatched(mf.o, sc, 1<<22)
	if err != nil {
		return 0, usageError{err.Error()}
	}
	if *steps > 0 {
		all := w.Steps()
		if len(all) > *steps {
			all = all[len(all)-*steps:]
		}
		name := func(id int32) string { return r.TaskName(id) }
		for _, st := range all {
			fmt.Fprintf(stdout, "%s\n", fmtStep(st, w, name))
		}
		return exitOK, nil
	}
	if !s.Failed() {
		fmt.Fprintf(stdout, "the run did not fail: nothing to explain\n")
		return exitViolation, nil
	}
	ex := r.Explain(w, s.Violations[0], explain.Options{MaxRows: *maxRows})
	if *markdown {
		ex.WriteMarkdown(stdout)
	} else {
		ex.WriteText(stdout, *width)
	}
	return exitOK, nil
}

func fmtStep(st trace.Step, w *trace.Watch, name func(int32) string) string {
	head := fmt.Sprintf("%7d cpu%-3d %-60s ", st.N, st.CPU, w.Path(st.Path))
	switch st.Kind {
	case trace.StepRead, trace.StepWrite:
		op := "=="
		if st.Kind == trace.StepWrite {
			op = ":="
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
		return head + fmt.Sprintf("%s class%d#%d", v, st.Class, st.ID)
	case trace.StepEvent, trace.StepCheck:
		return head + st.Ev.Format(name)
	}
	return head + "?"
}
