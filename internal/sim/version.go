package sim

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// revision is the VCS revision, stamped by deploy/build-binary.sh with
// -ldflags -X where the build has no VCS information (a container build).
var revision string

// Version describes the running binary: its module version (or devel),
// the VCS revision it was built from (with "+dirty" for a modified tree)
// and the Go toolchain. Reports carry it, since a deterministic run
// repeats only on the same binary.
func Version() string {
	v, rev, dirty := "devel", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if rev == "" {
		rev = revision
	}
	out := "proxysim " + v
	if rev != "" {
		if dirty {
			rev += "+dirty"
		}
		out += " (" + rev + ")"
	}
	return fmt.Sprintf("%s %s %s/%s", out, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
