package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// organisational matches words about how the project's work was
// organised rather than about the product: the repository speaks of the
// product alone.
var organisational = regexp.MustCompile(`(?i)\b(sittings?|(this|one|that|a|the|each|every|previous|next|earlier|later) sessions?|helper agents?|subagents?|this stop|closing notes?)\b`)

// Every tracked Markdown and Go file is free of them, and the README
// keeps its size (a page a new user reads, not a notebook).
func TestDocsSpeakOfTheProduct(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := trackedFiles(root)
	if err != nil {
		t.Skipf("no file list: %v", err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".md") && !strings.HasSuffix(f, ".go") || f == "cmd/proxysim/docs_test.go" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(b, []byte("\n")) {
			if m := organisational.Find(line); m != nil {
				t.Errorf("%s:%d: %q speaks of how the work was organised, not of the product", f, i+1, m)
			}
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(readme, []byte("\n")); n > 200 {
		t.Errorf("README.md has %d lines, more than 200", n)
	}
	if arch, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md")); err == nil {
		if n := bytes.Count(arch, []byte("\n")); n > 400 {
			t.Errorf("docs/architecture.md has %d lines, more than 400", n)
		}
	}
}

// The pattern catches what it is for, and not the product's own words.
func TestOrganisationalPattern(t *testing.T) {
	for _, s := range []string{"measured in one sitting", "in this session", "a helper agent wrote", "see the closing note", "before this stop"} {
		if !organisational.MatchString(s) {
			t.Errorf("%q not caught", s)
		}
	}
	for _, s := range []string{"the conductor's turn", "ww_mutex acquire context", "tbench clients", "a helper function"} {
		if organisational.MatchString(s) {
			t.Errorf("%q caught", s)
		}
	}
}

// trackedFiles lists the repository's tracked files (git ls-files), or,
// outside a git checkout, every file under root but .git.
func trackedFiles(root string) ([]string, error) {
	if out, err := exec.Command("git", "-C", root, "ls-files").Output(); err == nil {
		return strings.Fields(string(out)), nil
	}
	var files []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() && info.Name() == ".git" {
			return filepath.SkipDir
		}
		if !info.IsDir() {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}
