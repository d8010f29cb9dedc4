package topology

import (
	"reflect"
	"strings"
	"testing"
)

// The default 256-CPU machine is the benchmark reports' box: 2 sockets of
// 64 cores and 128 threads, sd_llc_size 16, Linux numbering.
func TestDefault256(t *testing.T) {
	tp := Default(256)
	if got := tp.String(); got != "2s-8llc-8c-2t" {
		t.Fatalf("default 256-CPU topology %s", got)
	}
	if n := tp.NumCPUs(); n != 256 {
		t.Fatalf("%d CPUs", n)
	}
	if s := tp.Siblings(5); !reflect.DeepEqual(s, []int{5, 133}) {
		t.Errorf("siblings of cpu5: %v, want [5 133]", s)
	}
	llc := tp.LLCSpan(0)
	if len(llc) != 16 || llc[0] != 0 || llc[7] != 7 || llc[8] != 128 || llc[15] != 135 {
		t.Errorf("LLC of cpu0: %v, want 0-7 and 128-135", llc)
	}
	if tp.Socket(63) != 0 || tp.Socket(64) != 1 || tp.Socket(191) != 0 || tp.Socket(192) != 1 {
		t.Errorf("sockets: cpu63 %d, cpu64 %d, cpu191 %d, cpu192 %d", tp.Socket(63), tp.Socket(64), tp.Socket(191), tp.Socket(192))
	}
	var levels []string
	for _, d := range tp.Domains(0) {
		levels = append(levels, d.Level.String())
	}
	if got := strings.Join(levels, ","); got != "SMT,LLC,PKG,MACHINE" {
		t.Errorf("cpu0's domains %s", got)
	}
	if k1, k2 := tp.LockOrderKey(129), tp.LockOrderKey(2); k1 >= k2 {
		t.Errorf("lock order: cpu129 (core 1) must come before cpu2 (core 2): %d vs %d", k1, k2)
	}
	if k1, k2 := tp.LockOrderKey(1), tp.LockOrderKey(129); k1 >= k2 {
		t.Errorf("lock order within core 1: cpu1 before cpu129: %d vs %d", k1, k2)
	}
}

// Degenerate levels are dropped: on one socket with one LLC the package
// and machine levels add nothing.
func TestDegenerateLevels(t *testing.T) {
	tp := Default(4)
	if got := tp.String(); got != "1s-1llc-2c-2t" {
		t.Fatalf("default 4-CPU topology %s", got)
	}
	ds := tp.Domains(0)
	if len(ds) != 2 || ds[0].Level != LevelSMT || ds[1].Level != LevelLLC || len(ds[1].CPUs) != 4 {
		t.Fatalf("cpu0's domains %+v, want SMT {0,2} and LLC {0-3}", ds)
	}
	one := Default(1)
	if len(one.Domains(0)) != 0 || one.String() != "1s-1llc-1c-1t" {
		t.Fatalf("1 CPU: %s with domains %+v", one, one.Domains(0))
	}
	odd := Default(3)
	if odd.String() != "1s-1llc-3c-1t" || len(odd.Siblings(1)) != 1 {
		t.Fatalf("3 CPUs: %s siblings %v", odd, odd.Siblings(1))
	}
}

func TestParse(t *testing.T) {
	tp, err := Parse("2s-8llc-16c-2t")
	if err != nil || tp.NumCPUs() != 512 || tp.String() != "2s-8llc-16c-2t" {
		t.Fatalf("Parse: %v %v", tp, err)
	}
	for _, bad := range []string{"", "2s-8llc-8c", "2x-8llc-8c-2t", "0s-1llc-1c-1t", "2s-8llc-8c-2", "2s-8llc-8c--2t", "8s-8llc-16c-2t"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		} else if !strings.HasPrefix(err.Error(), "topology") {
			t.Errorf("Parse(%q): %v does not name the topology", bad, err)
		}
	}
}
