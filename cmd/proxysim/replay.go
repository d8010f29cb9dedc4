package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/proxysim/proxysim/internal/check"
	"github.com/proxysim/proxysim/internal/sim"
)

const replayUsage = `Usage: proxysim replay REPORT [--json]

Runs the command recorded in a failure report ("reproduce:" line) again and
checks that it hits the same violation at the same event number. Meant for
reports of deterministic runs (--deterministic), which repeat exactly.
Exit code 0 means the same violation at the same event, 1 not reproduced.

Flags:
`

// replayWallLimit caps the wall-clock time of replaying a concurrent
// stress run, which has no sim time of its own to end at.
const replayWallLimit = 10 * time.Minute

// preambleHeader starts a report that sim.WritePreamble wrote before the
// run and nothing replaced.
const preambleHeader = "proxysim report (run in progress or killed)"

var violationLine = regexp.MustCompile(`\[event #(\d+), t=[^\]]*\] invariant (\d+) \(([^)]+)\)`)

// replayFlags are replay's flags.
type replayFlags struct{ json bool }

// common points the common flags at f's storage.
func (f *replayFlags) common() commonFlags { return commonFlags{json: &f.json} }

// newReplayFlags is replay's flag set.
func newReplayFlags() (*flag.FlagSet, *replayFlags) {
	fs := newFlagSet("replay")
	f := &replayFlags{}
	f.common().register(fs, map[string]string{"json": "the recorded and the replayed violation, and whether they match"})
	return fs, f
}

// reportArg takes the one report file argument, before or after the
// flags, and parses the flags.
func reportArg(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) (string, error) {
	var path string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		path, args = args[0], args[1:]
	}
	if err := parse(fs, args, usage, stdout); err != nil {
		return "", err
	}
	if path == "" && fs.NArg() == 1 {
		path = fs.Arg(0)
	} else if fs.NArg() > 0 || path == "" {
		return "", usagef("want exactly one report file")
	}
	return path, nil
}

// replayResult is replay's result (--json prints it).
type replayResult struct {
	Command    string           `json:"command"`
	Recorded   replayViolation  `json:"recorded"`
	Replayed   *check.Violation `json:"replayed,omitempty"` // nil: no violation
	Reproduced bool             `json:"reproduced"`
}

type replayViolation struct {
	Invariant string `json:"invariant"`
	Number    int    `json:"number"`
	Seq       uint64 `json:"event_seq"`
}

func cmdReplay(args []string, stdout, stderr io.Writer) (int, error) {
	fs, f := newReplayFlags()
	path, err := reportArg(fs, args, replayUsage, stdout)
	if err != nil {
		return 0, err
	}
	rep, err := readReport(path)
	if err != nil {
		return 0, err
	}
	cmdline, want, mf := rep.cmdline, rep.violation, rep.flags
	if !mf.o.Deterministic {
		fmt.Fprintf(stderr, "proxysim replay: the report is of a concurrent run: it may not repeat (use --deterministic runs for exact replay)\n")
		if mf.o.Duration > 0 {
			fmt.Fprintf(stderr, "proxysim replay: replaying for at most %v of wall time\n", mf.o.Duration)
		}
	}
	sc, err := sim.LoadScenario(mf.o.Workload, mf.o.CPUs, mf.o.Tasks)
	if err != nil {
		return 0, usageError{err.Error()}
	}
	r, err := sim.Build(mf.o, sc)
	if err != nil {
		return 0, usageError{err.Error()}
	}
	restore := serialProcs(mf.o)
	s := r.Execute()
	restore()
	seq, _ := strconv.ParseUint(want[1], 10, 64)
	num, _ := strconv.Atoi(want[2])
	res := replayResult{Command: cmdline, Recorded: replayViolation{Invariant: want[3], Number: num, Seq: seq}}
	if s.Failed() {
		v := s.Violations[0]
		res.Replayed = &v
		res.Reproduced = v.Name == want[3] && v.Seq == seq
	}
	code := exitViolation
	if res.Reproduced {
		code = exitOK
	}
	if f.json {
		return code, writeJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "replaying: %s\nrecorded:  invariant %s (%s) at event #%s\n", cmdline, want[2], want[3], want[1])
	switch v := res.Replayed; {
	case v == nil:
		fmt.Fprintf(stdout, "replayed:  no violation\nNOT reproduced\n")
	case res.Reproduced:
		fmt.Fprintf(stdout, "replayed:  invariant %d (%s) at event #%d: %s\n", int(v.Invariant), v.Name, v.Seq, v.Message)
		fmt.Fprintf(stdout, "reproduced: same violation at the same event\n")
	default:
		fmt.Fprintf(stdout, "replayed:  invariant %d (%s) at event #%d: %s\n", int(v.Invariant), v.Name, v.Seq, v.Message)
		fmt.Fprintf(stdout, "NOT reproduced: a different violation or event\n")
	}
	return code, nil
}

// failureReport is what replay and shrink need from a failure report.
type failureReport struct {
	text      string
	cmdline   string   // the "reproduce:" command
	words     []string // cmdline split into words
	violation []string // violationLine match: event, invariant number, name
	flags     *machineFlags
}

// version returns the proxysim version that wrote the report ("" if it
// does not say).
func (r *failureReport) version() string {
	for _, l := range strings.Split(r.text, "\n") {
		if v, ok := strings.CutPrefix(l, "version: "); ok {
			return v
		}
	}
	return ""
}

// readReport reads a failure report and parses its recorded command.
func readReport(path string) (*failureReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	r := &failureReport{text: string(b)}
	for _, l := range strings.Split(r.text, "\n") {
		if strings.HasPrefix(l, "reproduce: ") {
			r.cmdline = strings.TrimPrefix(l, "reproduce: ")
			break
		}
	}
	if r.cmdline == "" {
		return nil, usagef("%s: no 'reproduce:' line: not a proxysim report", path)
	}
	if r.violation = violationLine.FindStringSubmatch(r.text); r.violation == nil {
		if strings.HasPrefix(r.text, preambleHeader) {
			return nil, usagef("%s holds only the preamble written before the run started: the process died before it could write the report (under -race with GORACE=halt_on_error=1 the race detector halted it: the data race report is on that run's stderr); rerun its command to reproduce: %s", path, r.cmdline)
		}
		return nil, usagef("%s: the report records no violation", path)
	}
	r.words, err = shellWords(r.cmdline)
	if err != nil || len(r.words) < 2 || r.words[0] != "proxysim" || (r.words[1] != "run" && r.words[1] != "stress") {
		return nil, usagef("%s: cannot rerun %q", path, r.cmdline)
	}
	if r.flags, err = parseMachineArgs(r.words[1], r.words[2:]); err != nil {
		return nil, err
	}
	return r, nil
}

// parseMachineArgs parses run or stress flags the way those commands do.
func parseMachineArgs(verb string, args []string) (*machineFlags, error) {
	if verb == "stress" {
		fs, sf := newStressFlags()
		if err := parse(fs, args, "", io.Discard); err != nil {
			return nil, err
		}
		if err := sf.finish(fs); err != nil {
			return nil, err
		}
		if sf.o.Deterministic {
			// a deterministic stress run ends at its sim time; keep the
			// recorded wall-clock cap out of the replay
			sf.o.Duration = 0
		} else if sf.o.Duration <= 0 || sf.o.Duration > replayWallLimit {
			// a concurrent stress run ends only at its wall-clock cap:
			// never replay it without one
			sf.o.Duration = replayWallLimit
		}
		return &sf.machineFlags, nil
	}
	fs, mf := newRunFlags()
	if err := parse(fs, args, "", io.Discard); err != nil {
		return nil, err
	}
	if err := mf.finish(fs); err != nil {
		return nil, err
	}
	return mf, nil
}

// shellWords splits a command line written by reproduce(): words
// separated by spaces, single quotes around words with special characters.
func shellWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord, inQuote := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case inQuote && ch == '\'':
			inQuote = false
		case inQuote:
			cur.WriteByte(ch)
		case ch == '\'':
			inQuote, inWord = true, true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case ch == ' ':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated quote")
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
