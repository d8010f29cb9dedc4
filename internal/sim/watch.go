package sim

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/explain"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/trace"
	"github.com/proxysim/proxysim/internal/workload"
)

// DefaultWatchSteps is how many watched steps an explanation replay
// keeps: the last ones before the violation.
const DefaultWatchSteps = 1 << 21

// RunWatched runs a deterministic run with a watch attached (trace.Watch:
// every lock step and every read and write of the protocol's state, the
// last steps of them kept) and returns the run, its summary and the
// watch. The schedule is the unwatched run's, event for event.
func RunWatched(o Options, sc *workload.Scenario, steps int) (*Run, *Summary, *trace.Watch, error) {
	if !o.Deterministic {
		return nil, nil, nil, fmt.Errorf("a watched run must be deterministic")
	}
	w := trace.NewWatch(steps)
	w.Name = explain.KernelName
	o.Watch = w
	r, err := Build(o, sc)
	if err != nil {
		return nil, nil, nil, err
	}
	s := r.Execute()
	return r, s, w, nil
}

// ExplainRun replays the deterministic run (o, sc) with a watch and
// explains its first violation. It returns the explanation (nil when the
// replay did not fail) and the replay's summary.
func ExplainRun(o Options, sc *workload.Scenario, opt explain.Options) (*explain.Explanation, *Summary, error) {
	r, s, w, err := RunWatched(o, sc, DefaultWatchSteps)
	if err != nil {
		return nil, nil, err
	}
	if !s.Failed() {
		return nil, s, nil
	}
	return r.Explain(w, s.Violations[0], opt), s, nil
}

// Explain slices a watched run that failed down to the steps its first
// violation depends on (explain.Analyze).
func (r *Run) Explain(w *trace.Watch, v check.Violation, opt explain.Options) *explain.Explanation {
	r.watch, r.watched = w, w.Steps()
	in := &explain.Input{Steps: r.watched, Path: w.Path, Event: w.Event, Names: r.explainNames(), Failure: failureOf(v)}
	ex := explain.Analyze(in, opt)
	ex.Truncated = w.Dropped() > 0
	return ex
}

// WriteSlicePerfetto writes the flight-recorder events of an explained
// run's window (ex.From to the violation) as a Perfetto trace: the
// stretch of the schedule the explanation's rows come from, every CPU.
func (r *Run) WriteSlicePerfetto(out io.Writer, ex *explain.Explanation, meta map[string]string) error {
	if r.watch == nil {
		return fmt.Errorf("the run was not explained")
	}
	var evs []trace.Event
	for i := ex.From; i <= ex.To && i < len(r.watched); i++ {
		if e, ok := r.watch.Event(&r.watched[i]); ok {
			evs = append(evs, *e)
		}
	}
	return trace.WritePerfetto(out, evs, r.Machine.NumCPUs(), r.TaskName, meta)
}

// ExplainEvents lays out the flight recorder's last events of the tasks
// a violation concerns (explain.FromEvents): the explanation of a failure
// with no deterministic reproduction.
func (r *Run) ExplainEvents(v check.Violation, maxRows int) *explain.Explanation {
	return explain.FromEvents(r.Machine.Log.Merged(0), r.explainNames(), failureOf(v), maxRows)
}

// explainNames names the machine's objects for an explanation.
func (r *Run) explainNames() explain.Names {
	m := r.Machine
	return explain.Names{
		Task: func(id int32) string { return r.TaskName(id) },
		Mutex: func(id int32) string {
			if int(id) < len(m.Mutexes()) {
				return fmt.Sprintf("m%d", id)
			}
			return fmt.Sprint(id)
		},
		RQLockCPU: func(key int32) int { return int(key & 0xffff) },
		State:     func(v int64) string { return task.State(v).String() },
		Class: func(id int32) string {
			p := m.Task(int(id))
			if p == nil {
				return ""
			}
			switch pol := p.SE.Policy; {
			case pol.RT():
				return fmt.Sprintf("%s %d", strings.ToUpper(pol.String()), p.SE.RTPriority)
			case pol.DL():
				return "DEADLINE"
			}
			return "fair"
		},
	}
}

// failureOf is a violation as an explanation's failure: the tasks and
// mutexes its message names.
func failureOf(v check.Violation) explain.Failure {
	f := explain.Failure{Invariant: int(v.Invariant), Name: v.Name, Message: v.Message, CPU: v.CPU, Task: int32(v.Task)}
	if v.Task > 0 {
		f.Tasks = append(f.Tasks, int32(v.Task))
	}
	for _, id := range namedTasks(v.Message) {
		if id != int32(v.Task) && !contains(f.Tasks, id) {
			f.Tasks = append(f.Tasks, id)
		}
	}
	f.Mutexes = namedMutexes(v.Message)
	return f
}

var (
	taskNameRE  = regexp.MustCompile(`[A-Za-z][\w.-]*/(\d+)\b`)
	mutexNameRE = regexp.MustCompile(`[\w.-]+/m(\d+)\b`)
)

// namedTasks returns the task ids a violation message names ("name/id").
func namedTasks(msg string) []int32 {
	var out []int32
	for _, m := range taskNameRE.FindAllStringSubmatch(msg, -1) {
		if mutexNameRE.MatchString(m[0]) {
			continue
		}
		if id, err := strconv.Atoi(m[1]); err == nil && !contains(out, int32(id)) {
			out = append(out, int32(id))
		}
	}
	return out
}

// namedMutexes returns the mutex ids a violation message names ("name/mN").
func namedMutexes(msg string) []int32 {
	var out []int32
	for _, m := range mutexNameRE.FindAllStringSubmatch(msg, -1) {
		if id, err := strconv.Atoi(m[1]); err == nil && !contains(out, int32(id)) {
			out = append(out, int32(id))
		}
	}
	return out
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
