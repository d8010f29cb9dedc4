// Command proxysim runs the proxy-execution simulator.
//
// Usage:
//
//	proxysim run     [flags]   one run on a built-in workload or a scenario file
//	proxysim stress  [flags]   race hunting: jitter, stutter, affinity shuffles
//	proxysim bugs    [--json]  the catalogue of known proxy-execution bugs (--hunt)
//	proxysim explore [flags]   many short deterministic runs, stop at the first failure
//	proxysim ab      [flags]   A/B benchmark tables: proxy execution off / single-rq / full
//	proxysim replay  REPORT    rerun a report's command, check the same violation
//	proxysim shrink  REPORT    shrink a deterministic failure to a small scenario file
//	proxysim version
//
// Exit codes: 0 clean, 1 invariant violation, 2 usage or input error,
// 3 internal error, 130 interrupted (SIGINT), 143 terminated (SIGTERM).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
)

// Exit codes.
const (
	exitOK        = 0
	exitViolation = 1
	exitUsage     = 2
	exitInternal  = 3
	// An interrupted run exits 128 + the signal's number, as a shell
	// reports a command killed by it: 130 for SIGINT, 143 for SIGTERM.
	exitInterrupted = 130
	exitTerminated  = 143
)

const exitCodesLine = "Exit codes: 0 clean, 1 invariant violation, 2 usage or input error, 3 internal error, 130 interrupted (SIGINT), 143 terminated (SIGTERM)."

// usageError is bad input: one line on stderr, exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) (int, error)
}

var commands []command

func init() {
	commands = []command{
		{"run", "run the simulated machine once and print a summary", cmdRun},
		{"stress", "hunt races: jitter, stutter and affinity shuffles, stat lines, reports", cmdStress},
		{"bugs", "list the catalogue of known proxy-execution bugs (--json); --hunt measures time to detection", cmdBugs},
		{"explore", "schedule exploration: many short deterministic runs in parallel, stop at the first failure", cmdExplore},
		{"shrink", "shrink a deterministic failure to a small scenario file that still fails the same way", cmdShrink},
		{"ab", "A/B benchmark tables (hackbench, tbench, netperf, schbench) for proxy-exec off / single-rq / full, with the counts behind them", cmdAB},
		{"explain", "explain a failure: the interleaving as a CPU-column diagram in kernel terms, cut to what caused it", cmdExplain},
		{"replay", "run a failure report's command again and check it hits the same violation at the same event", cmdReplay},
		{"version", "print the version", cmdVersion},
	}
}

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	// Several goroutines write here (the signal watcher, logs, the
	// command): one write at a time, whatever the writer.
	stdout, stderr = &syncWriter{w: stdout}, &syncWriter{w: stderr}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		topUsage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			code, err := c.run(args[1:], stdout, stderr)
			if err != nil {
				var ue usageError
				if errors.As(err, &ue) {
					fmt.Fprintf(stderr, "proxysim %s: %v\n", c.name, err)
					return exitUsage
				}
				if errors.Is(err, flag.ErrHelp) {
					return exitOK
				}
				fmt.Fprintf(stderr, "proxysim %s: %v\n", c.name, err)
				return exitInternal
			}
			return code
		}
	}
	fmt.Fprintf(stderr, "proxysim: unknown command %q (try 'proxysim --help')\n", args[0])
	return exitUsage
}

func topUsage(w io.Writer) {
	fmt.Fprintf(w, `proxysim: a simulator of Linux proxy execution (CONFIG_SCHED_PROXY_EXEC).

Usage: proxysim <command> [flags]

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, `
Run 'proxysim <command> --help' for a command's flags.

%s
`, exitCodesLine)
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
