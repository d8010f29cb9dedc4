package bugs

import (
	"strings"
	"testing"
)

// Every entry says whether it is historical (fixed upstream in a named
// version) or a finding (open in the reference).
func TestKinds(t *testing.T) {
	findings := 0
	for _, b := range Catalogue {
		switch b.Kind {
		case Historical:
			if b.FixedIn == "" || strings.HasPrefix(b.FixedIn, "open") {
				t.Errorf("%s: historical entry without a fixing version (%q)", b.Name, b.FixedIn)
			}
		case Finding:
			findings++
			// "open@REF", or "open@REF + SERIES" for a hole in a series
			// (never merged) as it would run on the reference
			ref, _, _ := strings.Cut(strings.TrimPrefix(b.FixedIn, "open@"), " + ")
			if !strings.HasPrefix(b.FixedIn, "open@") || !strings.Contains(Reference, ref) {
				t.Errorf("%s: finding not marked open in the reference %s (%q)", b.Name, Reference, b.FixedIn)
			}
		default:
			t.Errorf("%s: kind %q", b.Name, b.Kind)
		}
		if b.Description == "" || b.Detector == "" {
			t.Errorf("%s: no description or detector", b.Name)
		}
	}
	if findings == 0 {
		t.Error("no findings in the catalogue")
	}
}
