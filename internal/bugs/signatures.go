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

// findingDocs is where each finding is written up, under docs/findings/
// (docs/findings.md is the index). F4, F5, F9 and F11 are review
// remarks; F10 was withdrawn; F16's entry is its lower-priority case.
var findingDocs = map[string]string{
	"F1": "F1-early-activation.md", "F2": "F2-proxy-keeps-donor.md", "F3": "F3-ttwu-keeps-blocked.md",
	"F4": "review-remarks.md", "F5": "review-remarks.md", "F6": "F6-srq-pulls-donor.md",
	"F7": "F7-core-flip-repick.md", "F8": "F8-core-flip-stale-pick.md", "F9": "review-remarks.md",
	"F10": "withdrawn.md", "F11": "review-remarks.md", "F12": "F12-proxy-migrate-offline.md",
	"F13": "F13-donor-affinity-exempt.md", "F14": "F14-core-dl-tie.md", "F15": "F15-activate-exited.md",
	"F16": "F16-core-replenish-stale-pick-fair.md", "F17": "F17-core-throttle-stale-pick.md",
}

// FindingOf names the docs/findings.md entry of a catalogue entry ("F1"),
// or "".
func FindingOf(name string) string { return findings[name] }

// FindingDoc gives the file, relative to the repository, that writes up
// the finding of a catalogue entry ("docs/findings/F1-early-activation.md"),
// or "".
func FindingDoc(name string) string {
	if d, ok := findingDocs[findings[name]]; ok {
		return "docs/findings/" + d
	}
	return ""
}

// SignaturesOf lists the failure signatures (invariant@kernel function,
// as proxysim explain names a failure) the entry's bug has been met with:
// a failure with one of them is this bug met again.
func SignaturesOf(name string) []string { return signatures[name] }
