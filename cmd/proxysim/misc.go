package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/proxysim/proxysim/internal/bugs"
)

const bugsUsage = `Usage: proxysim bugs [--json]

Lists the catalogue of real proxy-execution bugs that proxysim can switch
back on with --bug NAME (see proxy-exec-protocol notes, section 6).

Flags:
`

func cmdBugs(args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("bugs", bugsUsage, stderr)
	asJSON := fs.Bool("json", false, "print a JSON list of {name, fixed_in, description, number, detector}")
	if err := parse(fs, args, bugsUsage, stdout); err != nil {
		return 0, err
	}
	if fs.NArg() > 0 {
		return 0, usagef("unexpected argument %q", fs.Arg(0))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return exitOK, enc.Encode(bugs.Catalogue)
	}
	fmt.Fprintf(stdout, "%-26s %-13s %s\n", "NAME", "FIXED IN", "DESCRIPTION")
	for _, b := range bugs.Catalogue {
		fmt.Fprintf(stdout, "%-26s %-13s %s\n", b.Name, b.FixedIn, b.Description)
	}
	return exitOK, nil
}

func cmdVersion(args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) > 0 {
		return 0, usagef("version takes no arguments")
	}
	v, rev := "devel", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	fmt.Fprintf(stdout, "proxysim %s", v)
	if rev != "" {
		fmt.Fprintf(stdout, " (%s)", rev)
	}
	fmt.Fprintf(stdout, " %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK, nil
}
