package bugs

import (
	"encoding/json"
	"strings"
)

// Need is something a catalogue entry's code needs in a run to run at
// all: a feature of the machine, an injector, or tasks of a kind in the
// workload. Without it the entry is switched on and its code never runs.
type Need uint16

// The needs.
const (
	NeedCoreSched    Need = 1 << iota // core scheduling, the merged (5.14) core-wide pick
	NeedCoreV3                        // core scheduling with RFC v3's pick_task
	NeedCoreFlips                     // core scheduling switched off and on at run time
	NeedSharedRunq                    // SHARED_RUNQ with the v3 or v4 hooks (every tree insert pushed)
	NeedSRQDrain                      // SHARED_RUNQ drains: feature flips or domain rebuilds
	NeedHotplug                       // CPUs going offline and online
	NeedDeadline                      // SCHED_DEADLINE tasks in the workload
	NeedRT                            // SCHED_FIFO/RR tasks in the workload
	NeedWW                            // ww_mutexes in the workload
	NeedExits                         // tasks that exit (SIGKILL, or an exit instruction)
	NeedDelayDequeue                  // the DELAY_DEQUEUE sched feature (on by default)
	numNeeds         = iota
)

// NeedInfo describes a need: its name (as `proxysim bugs --json` lists
// it) and the command-line flag that provides it.
type NeedInfo struct {
	Name string
	Flag string
	What string
}

var needInfo = [numNeeds]NeedInfo{
	{"core-sched", "--core-sched", "core scheduling"},
	{"core-sched-v3", "--core-sched=v3", "core scheduling with RFC v3's pick"},
	{"core-sched-flips", "--core-sched-toggle-interval D", "core scheduling switched off and on at run time"},
	{"shared-runq", "--sched-features SHARED_RUNQ", "SHARED_RUNQ with the v3 or v4 hooks"},
	{"shared-runq-drains", "--srq-toggle-interval D", "SHARED_RUNQ drains (feature flips or domain rebuilds)"},
	{"hotplug", "--hotplug-interval D", "CPU hotplug"},
	{"deadline-tasks", "a workload with SCHED_DEADLINE tasks", "SCHED_DEADLINE tasks in the workload"},
	{"rt-tasks", "a workload with SCHED_FIFO/RR tasks", "real-time tasks in the workload"},
	{"ww-mutexes", "a workload with ww_mutexes", "ww_mutexes in the workload"},
	{"task-exits", "--signal-rate R --signal-fatal F", "tasks that exit (SIGKILL or an exit instruction)"},
	{"delay-dequeue", "--sched-features DELAY_DEQUEUE", "the DELAY_DEQUEUE sched feature"},
}

// Info describes one need (a single bit).
func (n Need) Info() NeedInfo {
	for i := 0; i < numNeeds; i++ {
		if n == 1<<i {
			return needInfo[i]
		}
	}
	return NeedInfo{}
}

// Each lists the single needs of n in order.
func (n Need) Each() []Need {
	var out []Need
	for i := 0; i < numNeeds; i++ {
		if n&(1<<i) != 0 {
			out = append(out, 1<<i)
		}
	}
	return out
}

// Names lists the needs' names.
func (n Need) Names() []string {
	out := []string{}
	for _, e := range n.Each() {
		out = append(out, e.Info().Name)
	}
	return out
}

// Flags lists what provides each need, for a column of `proxysim bugs`.
func (n Need) Flags() string {
	var out []string
	for _, e := range n.Each() {
		out = append(out, e.Info().Flag)
	}
	return strings.Join(out, ", ")
}

// needs says what each entry needs (entries that run in every
// configuration with proxy execution are not listed). It is the one
// source for `proxysim bugs`, the switches of --bug and the hunt's set-up
// (sim.EnableBugNeeds).
var needs = map[ID]Need{
	CoreschedStall:         NeedCoreV3,
	CoreStealDonor:         NeedCoreSched,
	SRQPullsDonor:          NeedSharedRunq,
	SRQDrainIRQsOn:         NeedSharedRunq | NeedSRQDrain,
	ReturnToOffline:        NeedHotplug,
	CoreLockFlip:           NeedCoreSched | NeedCoreFlips,
	CoreLockCPUOrder:       NeedCoreSched,
	CoreForceIdleAcct:      NeedCoreSched,
	CoreFlipRepick:         NeedCoreSched | NeedCoreFlips,
	CoreFlipStalePick:      NeedCoreSched | NeedCoreFlips,
	CoreFIVruntime:         NeedCoreSched,
	CoreFINoTick:           NeedCoreSched,
	CoreFIChargeStale:      NeedCoreSched,
	WWNoClearBlockedOn:     NeedWW,
	WWNestedBlockedLock:    NeedWW,
	WWWoundWrongLock:       NeedWW,
	ProxyMigrateOffline:    NeedHotplug | NeedDeadline,
	CoreDLTie:              NeedCoreSched | NeedDeadline,
	CoreRTForceidle:        NeedCoreSched | NeedRT,
	CoreTreeStaleKey:       NeedCoreSched,
	ActivateExited:         NeedExits,
	CoreReplenishStalePick: NeedCoreSched | NeedDeadline,
	CoreThrottleStalePick:  NeedCoreSched | NeedDeadline,
	CoreOffForcedIdle:      NeedCoreSched | NeedCoreFlips,
	// sched_delayed is only ever set with DELAY_DEQUEUE on.
	DelayedPlainRead: NeedDelayDequeue,
}

// Needs says what b needs in a run for its code to run.
func (b Bug) Needs() Need { return needs[b.ID] }

// Needs is the union of the needs of the entries in s.
func (s Set) Needs() Need {
	var n Need
	for id, nd := range needs {
		if s.Has(id) {
			n |= nd
		}
	}
	return n
}

// MarshalJSON adds the entry's needs ("needs": names, "needs_flags":
// what provides them) to its fields.
func (b Bug) MarshalJSON() ([]byte, error) {
	type plain Bug
	return json.Marshal(struct {
		plain
		Needs      []string `json:"needs"`
		NeedsFlags string   `json:"needs_flags"`
	}{plain(b), b.Needs().Names(), b.Needs().Flags()})
}
