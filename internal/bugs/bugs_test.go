package bugs

import (
	"os"
	"path/filepath"
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

// Every finding's write-up is listed in the index, docs/findings.md, so
// that the path a failure report prints (FindingDoc) is reachable from
// the index.
func TestFindingDocsInIndex(t *testing.T) {
	index, err := os.ReadFile(filepath.Join("..", "..", "docs", "findings.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range findings {
		doc := FindingDoc(name)
		if doc == "" {
			t.Errorf("%s (%s): no write-up", name, f)
			continue
		}
		if !strings.Contains(string(index), strings.TrimPrefix(doc, "docs/")) {
			t.Errorf("%s (%s): docs/findings.md does not link %s", name, f, doc)
		}
	}
}
