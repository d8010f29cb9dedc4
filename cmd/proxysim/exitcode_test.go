package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cliChildEnv makes the test binary run main() instead of the tests, so
// that a test can start the real command as a process of its own (real
// file descriptors, real exit code) without building a binary.
const cliChildEnv = "PROXYSIM_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(cliChildEnv) == "1" {
		main() // exits
	}
	os.Exit(m.Run())
}

// outKind is what a child's stdout or stderr is.
type outKind string

const (
	outFile    outKind = "file"
	outPipe    outKind = "pipe"
	outDevNull outKind = "devnull"
)

// runChild runs the CLI with args in a process of its own, in dir, with
// stdout and stderr of the kinds given, and returns its exit code and
// what it wrote (nothing for /dev/null).
func runChild(t *testing.T, dir string, stdout, stderr outKind, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	// A race build's child would sleep a second at exit (GORACE's
	// atexit_sleep_ms): not here.
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var read []func() string
	for i, k := range []outKind{stdout, stderr} {
		var w *os.File
		switch k {
		case outFile:
			f, err := os.CreateTemp(dir, "out")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			w = f
			read = append(read, func() string { b, _ := os.ReadFile(f.Name()); return string(b) })
		case outDevNull:
			f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			w = f
			read = append(read, func() string { return "" })
		case outPipe:
			// exec copies from a pipe into a buffer
			var b bytes.Buffer
			if i == 0 {
				cmd.Stdout = &b
			} else {
				cmd.Stderr = &b
			}
			read = append(read, b.String)
			continue
		}
		if i == 0 {
			cmd.Stdout = w
		} else {
			cmd.Stderr = w
		}
	}
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return code, read[0](), read[1]()
}

// Every command exits with the code its run deserves whatever its stdout
// and stderr are: a regular file, a pipe or /dev/null. /dev/null is a
// character device, and the progress display once took every character
// device for a terminal: `proxysim run ... 2>/dev/null` drew it there and
// then stopped it twice, a panic after a clean summary: exit 2.
func TestExitCodeWhateverTheOutputs(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "det.report")
	failing := []string{"run", "--deterministic", "--strategy", "random", "--cpus", "4", "--sim-time", "200ms", "--seed", "1",
		"--bug", "runnable-without-return", "--workload", "stress"}
	if code, _, errs := runChild(t, dir, outFile, outFile, append(failing, "--report", rep)...); code != exitViolation {
		t.Fatalf("set-up run: exit %d, want 1\n%s", code, errs)
	}
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"run", []string{"run", "--cpus", "4", "--sim-time", "10ms", "--seed", "1"}, exitOK},
		{"run-violation", append(failing, "--report", filepath.Join(dir, "again.report")), exitViolation},
		{"stress", []string{"stress", "--cpus", "4", "--sim-time", "20ms", "--seed", "1", "--stat-interval", "0"}, exitOK},
		{"explore", []string{"explore", "--runs", "2", "--cpus", "4", "--sim-time", "10ms", "--workers", "1", "--seed", "1"}, exitOK},
		{"bugs", []string{"bugs"}, exitOK},
		{"replay", []string{"replay", rep}, exitOK},
		{"explain", []string{"explain", rep}, exitOK},
		{"shrink", []string{"shrink", rep, "--max-tries", "3", "--seeds", "1", "--out", filepath.Join(dir, "small.json")}, exitOK},
		{"ab", []string{"ab", "--workload", "hackbench:loops=2", "--cases", "1", "--configs", "off;full", "--seeds", "1", "--cpus", "4", "--jobs", "1"}, exitOK},
		{"version", []string{"version"}, exitOK},
		{"bad-flag", []string{"run", "--no-such-flag"}, exitUsage},
	}
	kinds := []outKind{outFile, outPipe, outDevNull}
	var every [][2]outKind // every pair, for run: the command with a progress display
	for _, so := range kinds {
		for _, se := range kinds {
			every = append(every, [2]outKind{so, se})
		}
	}
	// each kind on each side once, for the others
	some := [][2]outKind{{outFile, outPipe}, {outPipe, outDevNull}, {outDevNull, outFile}}
	for _, c := range cases {
		pairs := some
		if c.name == "run" {
			pairs = every
		}
		for _, p := range pairs {
			so, se := p[0], p[1]
			code, out, errs := runChild(t, dir, so, se, c.args...)
			what := fmt.Sprintf("%s >%s 2>%s", c.name, so, se)
			if code != c.want {
				t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", what, code, c.want, tail(out, 500), tail(errs, 1500))
			}
			if strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine ") {
				t.Errorf("%s: stack trace on stderr:\n%s", what, tail(errs, 1500))
			}
			if strings.ContainsAny(errs, "\r\x1b") {
				t.Errorf("%s: terminal control on a stderr that is no terminal: %q", what, tail(errs, 300))
			}
		}
	}
}
