package workload

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the chain scenario file from the benchmark instead of checking it")

// chainFile is the 8-CPU chain of the A/B tables as a scenario file.
var chainFile = filepath.Join("..", "..", "testdata", "proxy-chain.json")

// The scenario file testdata/proxy-chain.json is the chain benchmark with
// its defaults (7 links) on 8 CPUs, named proxy-chain, written by Encode: `proxysim run
// --workload testdata/proxy-chain.json` and `proxysim ab --workload chain
// --cases 7 --cpus 8` run the same tasks. go test ./internal/workload
// -run ChainFile -rewrite writes it again.
func TestChainFileIsTheBenchmark(t *testing.T) {
	sc, err := Benchmark("chain")
	if err != nil {
		t.Fatal(err)
	}
	sc.Name, sc.CPUs = "proxy-chain", 8
	enc, err := Encode(sc)
	if err != nil {
		t.Fatal(err)
	}
	if *rewrite {
		if err := os.WriteFile(chainFile, enc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(chainFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, enc) {
		t.Fatalf("%s is not the chain benchmark on 8 CPUs; rewrite it with -rewrite", chainFile)
	}
	back, err := Parse(chainFile, got)
	if err != nil {
		t.Fatal(err)
	}
	if c := back.Chain; c == nil || *c != *sc.Chain || back.Groups[c.Waiter].Name != "rt" || back.Mutexes[c.End] != "m7" {
		t.Fatalf("the file's chain is %+v, want %+v (waiter rt, end m7)", back.Chain, sc.Chain)
	}
}

// A scenario file's "chain" must name a group and two different plain
// mutexes.
func TestChainKeyErrors(t *testing.T) {
	base := `{"cpus": 2, "mutexes": ["a", "b"], "groups": [{"name": "g", "program": [{"lock": "a"}, {"unlock": "a"}]}], "chain": %s}`
	for _, c := range []struct{ chain, want string }{
		{`{"waiter": "x", "head": "a", "end": "b"}`, `no group "x"`},
		{`{"waiter": "g", "head": "a", "end": "c"}`, `no mutex "c"`},
		{`{"waiter": "g", "head": "a", "end": "a"}`, "the same mutex"},
		{`{"waiter": "g", "head": "a"}`, `missing key "end"`},
		{`{"waiter": "g", "head": "a", "end": "b", "x": 1}`, "x"},
	} {
		_, err := Parse("t.json", []byte(fmt.Sprintf(base, c.chain)))
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("chain %s: error %v, want one saying %q", c.chain, err, c.want)
		}
	}
}
