package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// startCPUProfile starts --cpuprofile: the profile goes to a temporary
// file beside path and is renamed into place when the command ends, like
// every other output, so a reader never sees half a profile. stop writes
// a failure as one line on stderr. An empty path profiles nothing.
func startCPUProfile(path string, stderr io.Writer) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, usagef("--cpuprofile: cannot write %s: %v", path, err)
	}
	tmp := f.Name()
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, usagef("--cpuprofile: %v", err)
	}
	return func() {
		pprof.StopCPUProfile()
		err := f.Close()
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			os.Remove(tmp)
			fmt.Fprintf(stderr, "proxysim: cannot write the CPU profile %s: %v\n", path, err)
		}
	}, nil
}
