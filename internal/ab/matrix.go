package ab

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/proxysim/proxysim/internal/percpu"
	"github.com/proxysim/proxysim/internal/sim"
)

// FileVersion is the version of the results file format.
const FileVersion = 1

// Spec is what a matrix runs: everything a result's value depends on.
// A results file belongs to one Spec; resuming from a file of another is
// an error.
type Spec struct {
	Workload  string   `json:"workload"` // benchmark spec without the case parameter
	Bench     string   `json:"bench"`
	Primary   string   `json:"case_parameter"`
	CPUs      int      `json:"cpus"`
	Topology  string   `json:"topology"`
	SimTimeNs int64    `json:"sim_time_ns"`
	Strategy  string   `json:"strategy"`
	Cases     []int    `json:"cases"`
	Configs   []string `json:"configs"`
	Seeds     int      `json:"seeds"`
	FirstSeed uint64   `json:"first_seed"`
	// NoOptimisticSpin: the runs had mutex optimistic spinning off
	// (--optimistic-spin off); with it on, waiters that can spin rarely
	// block, and proxy execution has little to do.
	NoOptimisticSpin bool `json:"no_optimistic_spin,omitempty"`
	// NewidleCostNs, NewidleCPUCostNs and NewidleTaskCostNs are the
	// newidle cost flags of every run (per domain balanced, per CPU read,
	// per task examined).
	NewidleCostNs     int64 `json:"newidle_cost_ns,omitempty"`
	NewidleCPUCostNs  int64 `json:"newidle_cpu_cost_ns,omitempty"`
	NewidleTaskCostNs int64 `json:"newidle_task_cost_ns,omitempty"`
	// ProxyCosts are the virtual ns the series' own work costs in every
	// run (--proxy-costs).
	ProxyCosts percpu.ProxyCosts `json:"proxy_costs"`
	// MaxSkewNs is the clock skew bound asked for (--max-skew). Results
	// measured with a larger one (an older results file) stay usable and
	// are flagged in the tables (Cell.Inexact), so it is not part of Same.
	MaxSkewNs int64 `json:"max_skew_ns,omitempty"`
}

// Same says whether a result computed under o is valid under s (the
// cases, configs and seeds may differ: a result is keyed by them).
func (s Spec) Same(o Spec) bool {
	return s.Workload == o.Workload && s.CPUs == o.CPUs && s.Topology == o.Topology &&
		s.SimTimeNs == o.SimTimeNs && s.Strategy == o.Strategy && s.NoOptimisticSpin == o.NoOptimisticSpin &&
		s.NewidleCostNs == o.NewidleCostNs && s.NewidleCPUCostNs == o.NewidleCPUCostNs && s.NewidleTaskCostNs == o.NewidleTaskCostNs &&
		s.ProxyCosts == o.ProxyCosts
}

// Job is one run of the matrix.
type Job struct {
	Case   int
	Config string
	Seed   uint64
}

// Jobs lists the matrix's runs, case by case, config by config, seed by seed.
func (s Spec) Jobs() []Job {
	var out []Job
	for _, c := range s.Cases {
		for _, cfg := range s.Configs {
			for i := 0; i < s.Seeds; i++ {
				out = append(out, Job{c, cfg, s.FirstSeed + uint64(i)})
			}
		}
	}
	return out
}

// Result is one run's outcome: its figures and the counts that explain
// them.
type Result struct {
	Case       int               `json:"case"`
	Config     string            `json:"config"`
	Seed       uint64            `json:"seed"`
	CPUs       int               `json:"cpus"`
	SimTimeNs  int64             `json:"sim_time_ns"`
	WallNs     int64             `json:"wall_ns"`
	Bench      sim.BenchFigures  `json:"bench"`
	Counts     map[string]uint64 `json:"counts"`
	Violations []string          `json:"violations,omitempty"`
	TraceHash  string            `json:"trace_hash,omitempty"`
	// SkewBoundNs is the clock skew bound the run was measured with; 0 in
	// a file written before the bound existed, whose runs had an epoch's
	// skew (OldSkewBoundNs). MaxIPILatenessNs is the largest lateness an
	// IPI met in the run.
	SkewBoundNs      int64 `json:"skew_bound_ns,omitempty"`
	MaxIPILatenessNs int64 `json:"max_ipi_lateness_ns,omitempty"`
}

// OldSkewBoundNs is the skew of results written before the bound existed:
// a CPU could run an epoch (1 ms) ahead of another.
const OldSkewBoundNs = 1_000_000

// SkewBound is the clock skew bound r was measured with.
func (r *Result) SkewBound() int64 {
	if r.SkewBoundNs == 0 {
		return OldSkewBoundNs
	}
	return r.SkewBoundNs
}

// Key is the result's place in the matrix.
func (r *Result) Key() Job { return Job{r.Case, r.Config, r.Seed} }

// File is the results file: the matrix's spec and every result so far.
type File struct {
	Version int      `json:"version"`
	Spec    Spec     `json:"spec"`
	Results []Result `json:"results"`
}

// ReadFile reads a results file; a missing file is an empty one (nil, nil).
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s is not a proxysim ab results file: %v", path, err)
	}
	if f.Version != FileVersion {
		return nil, fmt.Errorf("%s: results file version %d, want %d", path, f.Version, FileVersion)
	}
	return &f, nil
}

// Write writes the file as indented JSON.
func (f *File) Write(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", " ")
	return e.Encode(f)
}

// Done indexes the results by job.
func (f *File) Done() map[Job]*Result {
	m := map[Job]*Result{}
	if f == nil {
		return m
	}
	for i := range f.Results {
		m[f.Results[i].Key()] = &f.Results[i]
	}
	return m
}
