package explain

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// kfuncs_gen.go is what scripts/kfuncs makes of the doc comments today:
// a function renamed, or its comment's kernel name changed, without the
// table regenerated would leave explain naming the wrong kernel function.
func TestKfuncsGenUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs scripts/kfuncs")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to run scripts/kfuncs with")
	}
	fresh := filepath.Join(t.TempDir(), "kfuncs_gen.go")
	cmd := exec.Command(goBin, "run", "./scripts/kfuncs", "-o", fresh)
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./scripts/kfuncs: %v\n%s", err, out)
	}
	want, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("kfuncs_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("internal/explain/kfuncs_gen.go is out of date with the doc comments: run go run ./scripts/kfuncs")
	}
}
