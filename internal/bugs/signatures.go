package bugs

// Findings maps each finding's catalogue entry to its number in
// docs/findings.md, for a failure that matches it.
var findings = map[string]string{
	"early-activation": "F1", "proxy-keeps-donor": "F2", "ttwu-keeps-blocked": "F3",
	"is-blocked-plain-read": "F4", "blocked-on-plain-read": "F5", "srq-pulls-donor": "F6",
	"core-flip-repick": "F7", "core-flip-stale-pick": "F8", "core-fi-charge-stale": "F9",
	"return-delayed": "F10", "delayed-plain-read": "F11", "proxy-migrate-offline": "F12",
	"donor-affinity-exempt": "F13", "core-dl-tie": "F14", "activate-exited": "F15",
	"core-replenish-stale-pick": "F16", "core-throttle-stale-pick": "F17",
}

// FindingOf names the docs/findings.md entry of a catalogue entry ("F1"),
// or "".
func FindingOf(name string) string { return findings[name] }

// SignaturesOf lists the failure signatures (invariant@kernel function,
// as proxysim explain names a failure) the entry's bug has been met with:
// a failure with one of them is this bug met again.
func SignaturesOf(name string) []string { return signatures[name] }
