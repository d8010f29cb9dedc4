package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/proxysim/proxysim/internal/cpu"
	"github.com/proxysim/proxysim/internal/percpu"
)

// DefaultProxyCosts are the costs of the proxy-execution series' own
// work that `proxysim ab` charges by default, built from two cited
// figures for a server of the reports' class (docs/benchmarks.md, "The
// series' overheads in virtual time", has the citations, and the
// measurements of `proxysim ab --calibrate` on the development machine,
// a virtual machine whose cross-CPU figures are its hypervisor's): never
// fitted to a report.
var DefaultProxyCosts = percpu.ProxyCosts{Link: 2 * citedLine, Repick: cpu.DefaultConfig().SchedCost,
	Migrate: 2*citedLine + citedIPI, Return: 2 * citedLine, Park: 2 * citedLine}

// The figures DefaultProxyCosts is made of (ns). A re-pick costs another
// pick: the model's own __schedule cost (cpu.Config.SchedCost).
const (
	// citedLine is a cache line moved between two cores of different
	// core complexes: AnandTech's core-to-core latency test on Zen 3 and
	// Zen 4, "up to 79.5 ns" across CCXs.
	citedLine = 80
	// citedIPI is an inter-processor interrupt's round trip, "~1-3
	// microseconds", its middle.
	citedIPI = 2000
)

// ParseProxyCosts reads --proxy-costs: "none" (free), "default"
// (DefaultProxyCosts), or a comma-separated list of link=, repick=,
// migrate=, return= and park= durations (those not named are 0), e.g.
// "link=100ns,migrate=2us".
func ParseProxyCosts(s string) (percpu.ProxyCosts, error) {
	var c percpu.ProxyCosts
	switch strings.TrimSpace(s) {
	case "", "none":
		return c, nil
	case "default":
		return DefaultProxyCosts, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return c, fmt.Errorf("%q: want none, default or NAME=DURATION,... (names link, repick, migrate, return, park)", kv)
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 || d > time.Millisecond {
			return c, fmt.Errorf("%s=%s: want a duration of 0 to 1ms", k, v)
		}
		switch strings.TrimSpace(k) {
		case "link":
			c.Link = int64(d)
		case "repick":
			c.Repick = int64(d)
		case "migrate":
			c.Migrate = int64(d)
		case "return":
			c.Return = int64(d)
		case "park":
			c.Park = int64(d)
		default:
			return c, fmt.Errorf("unknown cost %q (names: link, repick, migrate, return, park)", k)
		}
	}
	return c, nil
}

// FormatProxyCosts writes costs as ParseProxyCosts reads them.
func FormatProxyCosts(c percpu.ProxyCosts) string {
	if c == (percpu.ProxyCosts{}) {
		return "none"
	}
	return fmt.Sprintf("link=%v,repick=%v,migrate=%v,return=%v,park=%v",
		time.Duration(c.Link), time.Duration(c.Repick), time.Duration(c.Migrate), time.Duration(c.Return), time.Duration(c.Park))
}
