// Package ab builds the A/B tables of the proxy-execution series' test
// reports from proxysim benchmark runs: per case and configuration, a
// statistic over seeds (AMean, HMean or Median), normalised to the first
// configuration, with the percent improvement and the coefficient of
// variation, plus the counts that explain the difference.
package ab

import (
	"fmt"
	"math"
	"sort"
)

// Statistics the reports name.
const (
	AMean  = "AMean"
	HMean  = "HMean"
	Median = "Median"
)

// ParseStat accepts a statistic's name in any case.
func ParseStat(s string) (string, bool) {
	for _, n := range []string{AMean, HMean, Median} {
		if equalFold(s, n) {
			return n, true
		}
	}
	return "", false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// Stat computes statistic name over xs (NaN for no values; HMean of a
// set holding zero or a negative value is NaN too).
func Stat(name string, xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	switch name {
	case AMean:
		return amean(xs)
	case HMean:
		s := 0.0
		for _, x := range xs {
			if x <= 0 {
				return math.NaN()
			}
			s += 1 / x
		}
		return float64(len(xs)) / s
	case Median:
		s := append([]float64(nil), xs...)
		sort.Float64s(s)
		n := len(s)
		if n%2 == 1 {
			return s[n/2]
		}
		return (s[n/2-1] + s[n/2]) / 2
	}
	panic(fmt.Sprintf("ab: unknown statistic %q", name))
}

func amean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// CV is the coefficient of variation in percent: the sample standard
// deviation (n-1) over the arithmetic mean; 0 for fewer than two values.
func CV(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := amean(xs)
	if m == 0 {
		return 0
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return 100 * math.Sqrt(ss/float64(len(xs)-1)) / math.Abs(m)
}

// Compare normalises v to the baseline base: the ratio v/base and the
// percent improvement, positive when v is better (higher when
// higherBetter, else lower). The reports print the baseline's own
// improvement as -0.00 when lower is better; so does this. Equal values
// compare as 1.00 even when both are zero (a wake-up latency of 0: an
// idle CPU took the wake-up at once); v over a zero base is +Inf.
func Compare(v, base float64, higherBetter bool) (ratio, pctImp float64) {
	ratio = v / base
	if v == base {
		ratio = 1
	}
	if higherBetter {
		return ratio, (ratio - 1) * 100
	}
	return ratio, -(ratio - 1) * 100
}
