package sim

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/proxysim/proxysim/internal/bugs"
	"github.com/proxysim/proxysim/internal/cpu"
	"github.com/proxysim/proxysim/internal/rq"
	"github.com/proxysim/proxysim/internal/task"
	"github.com/proxysim/proxysim/internal/workload"
)

// What EnableBugNeeds switches on when a need is off (stress's defaults
// for the injectors).
const (
	DefaultCoreToggleInterval = 20 * time.Millisecond
	DefaultHotplugInterval    = 20 * time.Millisecond
	DefaultSRQToggleInterval  = time.Millisecond
	DefaultSignalRate         = 100
	DefaultSignalFatal        = 0.1
)

// NeedsOff says which needs the command line switched off on purpose (a
// flag given with its off value), so that EnableBugNeeds refuses them
// instead of switching them back on.
type NeedsOff struct {
	Hotplug    bool // --hotplug-interval 0
	CoreFlips  bool // --core-sched-toggle-interval 0
	TaskExits  bool // --signal-rate 0 or --signal-fatal 0
	SRQToggles bool // --srq-toggle-interval 0
}

// NeedsError is a need that EnableBugNeeds cannot switch on: the command
// line rules it out, or the workload lacks the tasks.
type NeedsError struct{ Msg string }

func (e *NeedsError) Error() string { return e.Msg }

// EnableBugNeeds makes sure the code of every catalogued bug in o.Bugs
// runs in the run o and sc describe (bugs.Need: the catalogue's one list
// of what each entry needs). A need that is off by default and not ruled
// out is switched on in o, and the returned notes say what was switched
// on, in one line (or "" when nothing was); a need the command line ruled out (NeedsOff, --core-sched=off,
// NO_SHARED_RUNQ, NO_DELAY_DEQUEUE, another core pick or hook placement)
// or the workload cannot meet (no deadline, real-time or ww tasks) is a
// *NeedsError naming what to add. The hunt's set-up (HuntSetup) uses it
// too.
func EnableBugNeeds(o *Options, sc *workload.Scenario, off NeedsOff) (note string, err error) {
	need := o.Bugs.Needs()
	if need == 0 {
		return "", nil
	}
	var items []string
	who := func(n bugs.Need) string {
		var names []string
		for _, b := range bugs.Catalogue {
			if o.Bugs.Has(b.ID) && b.Needs()&n != 0 {
				names = append(names, b.Name)
			}
		}
		return "--bug " + strings.Join(names, ", --bug ")
	}
	refuse := func(n bugs.Need, format string, a ...any) error {
		return &NeedsError{fmt.Sprintf("%s needs %s: %s", who(n), n.Info().What, fmt.Sprintf(format, a...))}
	}
	on := func(what string) { items = append(items, what) }

	given := o.CoreSched
	if given == "" {
		given = sc.CoreSched
	}
	mode, _ := cpu.ParseCoreMode(given) // checked by the flag and the scenario parser
	coreOn := mode != cpu.CoreOff
	switch {
	case need&bugs.NeedCoreV3 != 0 && given == "":
		o.CoreSched, coreOn = "v3", true
		on("core scheduling with RFC v3's pick (--core-sched=v3)")
	case need&bugs.NeedCoreV3 != 0 && mode != cpu.CoreV3:
		return "", refuse(bugs.NeedCoreV3, "use --core-sched=v3, not %s", coreSpelling(mode))
	case need&bugs.NeedCoreSched != 0 && given == "":
		o.CoreSched, coreOn = "on", true
		on("core scheduling, the 5.14 core-wide pick (--core-sched)")
	case need&bugs.NeedCoreSched != 0 && !coreOn:
		return "", refuse(bugs.NeedCoreSched, "use --core-sched, not %s", coreSpelling(mode))
	}
	if need&bugs.NeedCoreFlips != 0 && o.CoreToggleInterval <= 0 {
		if off.CoreFlips {
			return "", refuse(bugs.NeedCoreFlips, "give --core-sched-toggle-interval a positive interval, not 0")
		}
		o.CoreToggleInterval = DefaultCoreToggleInterval
		on(fmt.Sprintf("core scheduling switched off or on every %v of busy time per CPU (stress: --core-sched-toggle-interval)", DefaultCoreToggleInterval))
	}
	if need&bugs.NeedSharedRunq != 0 {
		switch {
		case o.SRQHooks == rq.SRQHooksV2:
			return "", refuse(bugs.NeedSharedRunq, "use --shared-runq-hooks v3 or v4, not v2 (v2 pushes only on wake-ups)")
		case o.SharedRunq == "off" && o.SRQToggleInterval <= 0:
			return "", refuse(bugs.NeedSharedRunq, "use --sched-features SHARED_RUNQ, not NO_SHARED_RUNQ")
		case o.SharedRunq == "":
			o.SharedRunq = "on"
			on("SHARED_RUNQ (--sched-features SHARED_RUNQ)")
		}
	}
	if need&bugs.NeedSRQDrain != 0 && o.SRQToggleInterval <= 0 && o.DomainRebuildInterval <= 0 {
		if off.SRQToggles {
			return "", refuse(bugs.NeedSRQDrain, "give --srq-toggle-interval (or --domain-rebuild-interval) a positive interval")
		}
		o.SRQToggleInterval = DefaultSRQToggleInterval
		on(fmt.Sprintf("a SHARED_RUNQ flip or rebuild every %v of busy time per CPU (stress: --srq-toggle-interval)", DefaultSRQToggleInterval))
	}
	if need&bugs.NeedHotplug != 0 && !sc.UsesHotplug() && (o.HotplugInterval <= 0 || o.HotplugIsDefault && coreOn) {
		switch {
		case coreOn:
			return "", refuse(bugs.NeedHotplug, "CPU hotplug with core scheduling is not modelled")
		case off.Hotplug:
			return "", refuse(bugs.NeedHotplug, "give --hotplug-interval a positive interval, not 0")
		}
		o.HotplugInterval, o.HotplugIsDefault = DefaultHotplugInterval, false
		on(fmt.Sprintf("CPU hotplug, a CPU down or up every %v (stress: --hotplug-interval)", DefaultHotplugInterval))
	}
	if need&bugs.NeedExits != 0 && !hasOp(sc, task.OpExit, task.OpKill) && !(o.SignalRate > 0 && o.SignalFatal > 0) {
		if off.TaskExits {
			return "", refuse(bugs.NeedExits, "give --signal-rate and --signal-fatal positive values")
		}
		o.SignalRate, o.SignalFatal, o.Respawn = DefaultSignalRate, DefaultSignalFatal, true
		on(fmt.Sprintf("signals, %v per busy CPU second, a tenth of them SIGKILL, killed tasks respawned (stress: --signal-rate, --signal-fatal, --respawn)", DefaultSignalRate))
	}
	if need&bugs.NeedDelayDequeue != 0 {
		f := rq.DefaultFeatures()
		for _, n := range o.SchedFeatures {
			f.Set(n)
		}
		if f&rq.FeatDelayDequeue == 0 {
			return "", refuse(bugs.NeedDelayDequeue, "drop NO_DELAY_DEQUEUE from --sched-features")
		}
	}
	for _, w := range []struct {
		n   bugs.Need
		has func(*workload.Scenario) bool
	}{{bugs.NeedDeadline, hasDeadline}, {bugs.NeedRT, hasRT}, {bugs.NeedWW, hasWW}} {
		if need&w.n != 0 && !w.has(sc) {
			return "", refuse(w.n, "workload %s has none (use --workload %s, or a scenario file with them)", sc.Name, orList(builtinsWith(w.has)))
		}
	}
	if len(items) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s: switched on what it needs: %s", who(need), strings.Join(items, "; ")), nil
}

func coreSpelling(mode cpu.CoreMode) string {
	switch mode {
	case cpu.CoreOff:
		return "--core-sched=off"
	case cpu.CoreV3:
		return "--core-sched=v3"
	}
	return "--core-sched"
}

// hasOp says whether a program of sc has an instruction of one of kinds.
func hasOp(sc *workload.Scenario, kinds ...task.OpKind) bool {
	for _, g := range sc.Groups {
		for _, op := range g.Program {
			if slices.Contains(kinds, op.Kind) {
				return true
			}
		}
	}
	return false
}

// hasPolicy says whether a group of sc has a policy p says yes to, or a
// program switches to one (setprio).
func hasPolicy(sc *workload.Scenario, p func(task.Policy) bool) bool {
	for _, g := range sc.Groups {
		if p(g.Policy) {
			return true
		}
		for _, op := range g.Program {
			if op.Kind == task.OpSetPrio && p(op.Policy) {
				return true
			}
		}
	}
	return false
}

func hasDeadline(sc *workload.Scenario) bool { return hasPolicy(sc, task.Policy.DL) }
func hasRT(sc *workload.Scenario) bool       { return hasPolicy(sc, task.Policy.RT) }
func hasWW(sc *workload.Scenario) bool {
	return len(sc.WW) > 0 && hasOp(sc, task.OpWWLock)
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// builtinsWith lists the built-in workloads has says yes to.
func builtinsWith(has func(*workload.Scenario) bool) []string {
	var out []string
	for _, n := range append(workload.BuiltinNames(), "coresched", "wwtorture") {
		if sc, err := workload.Builtin(n, 8, 0); err == nil && has(sc) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
