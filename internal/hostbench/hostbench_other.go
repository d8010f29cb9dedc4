//go:build !linux

// Package hostbench measures this machine for the cost model of
// `proxysim ab --calibrate` (Linux only).
package hostbench

import "errors"

var errUnsupported = errors.New("hostbench: the measurements need Linux (sched_setaffinity, blocking pipes)")

// LineTransfer is not available off Linux.
func LineTransfer(cpuA, cpuB, rounds int) (float64, error) { return 0, errUnsupported }

// PipeRoundTrip is not available off Linux.
func PipeRoundTrip(cpuA, cpuB, rounds int) (float64, error) { return 0, errUnsupported }

// Median is not available off Linux.
func Median(reps int, f func() (float64, error)) (float64, []float64, error) {
	return 0, nil, errUnsupported
}
