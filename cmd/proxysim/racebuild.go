package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// modulePath is the module whose cmd/proxysim a race build compiles.
const modulePath = "github.com/proxysim/proxysim"

// withoutRace returns args without the --race flag (any spelling).
func withoutRace(args []string) []string {
	var out []string
	for _, a := range args {
		switch strings.TrimLeft(a, "-") {
		case "race", "race=true", "race=1":
			if strings.HasPrefix(a, "-") {
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// runRaceBuild is 'proxysim bugs --hunt --race' from a binary built without
// -race: it builds the race-detector binary of the source tree in the
// current directory (go build -race) into a temporary directory and runs
// the same command with it, without --race, passing its output and exit
// code through. A failed build is one line on stderr, exit 2, before any
// hunt runs.
func runRaceBuild(args []string, stdout, stderr io.Writer) (int, error) {
	dir, err := os.MkdirTemp("", "proxysim-race-")
	if err != nil {
		return 0, usagef("--race: %v", err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "proxysim")
	fmt.Fprintf(stderr, "proxysim: building the race-detector binary (go build -race %s/cmd/proxysim)\n", modulePath)
	var out bytes.Buffer
	build := exec.Command("go", "build", "-race", "-o", bin, modulePath+"/cmd/proxysim")
	build.Stdout, build.Stderr = &out, &out
	if err := build.Run(); err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
		if first == "" {
			first = err.Error()
		}
		return 0, usagef("--race: cannot build the race binary (run from the proxysim source tree, with the go command and cgo): %s", first)
	}
	cmd := exec.Command(bin, append([]string{"bugs"}, withoutRace(args)...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	// The race build writes its reports to a file it follows, so that a
	// data race counts as a hunt's detection (raceLog); halting or a
	// changed exit status would end the hunt or hide its result.
	prefix := filepath.Join(dir, "race")
	cmd.Env = append(os.Environ(),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" log_path="+prefix+" halt_on_error=0 exitcode=0"),
		raceLogEnv+"="+prefix)
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() >= 0 {
			return ee.ExitCode(), nil
		}
		return exitInternal, fmt.Errorf("race binary: %v", err)
	}
	return exitOK, nil
}
