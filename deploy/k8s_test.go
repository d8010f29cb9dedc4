// Package deploy holds no code: its tests check the deployment files of
// this directory. It is a module of its own (deploy/go.mod) so that the
// Kubernetes and Prometheus-operator API modules stay out of proxysim's
// main module.
package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// doc is one YAML document of a manifest file.
type doc struct {
	file string
	n    int // document number in the file, from 0
	json []byte
	obj  any
}

func (d doc) String() string { return fmt.Sprintf("%s#%d", d.file, d.n) }

// newObject returns the Go API type of a manifest's apiVersion and kind.
func newObject(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "batch/v1 Job":
		return &batchv1.Job{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "monitoring.coreos.com/v1 PodMonitor":
		return &monitoringv1.PodMonitor{}, nil
	case "kustomize.config.k8s.io/v1beta1 Kustomization":
		return &kusttypes.Kustomization{}, nil
	}
	return nil, fmt.Errorf("no API type known for apiVersion %q kind %q", apiVersion, kind)
}

// splitDocuments returns the non-empty YAML documents of data.
func splitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			out = append(out, d)
		}
	}
}

func stripComments(d []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(d), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// decodeStrict decodes one YAML document into its API type, rejecting
// duplicate keys, unknown fields and fields whose case differs from the
// API's (three independent checks, see below). It returns the document as
// JSON, the decoded object, and every problem found.
func decodeStrict(y []byte) (j []byte, obj any, errs []error) {
	// Duplicate keys and YAML-only constructs are rejected here.
	j, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		return nil, nil, []error{err}
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return nil, nil, []error{err}
	}
	obj, err = newObject(tm.APIVersion, tm.Kind)
	if err != nil {
		return nil, nil, []error{err}
	}

	// 1. encoding/json with unknown fields disallowed. It matches keys
	// case-insensitively, hence the two checks after it.
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return nil, nil, []error{fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)}
	}
	if dec.More() {
		return nil, nil, []error{errors.New("trailing data after the object")}
	}

	// 2. The Kubernetes API server's own strict decoder: case-sensitive,
	// unknown and duplicate fields reported.
	fresh, _ := newObject(tm.APIVersion, tm.Kind)
	strictErrs, err := kjson.UnmarshalStrict(j, fresh)
	if err != nil {
		return nil, nil, []error{err}
	}
	for _, e := range strictErrs {
		errs = append(errs, fmt.Errorf("strict: %w", e))
	}

	// 3. Re-marshal and compare keys: every input key must come back with
	// the same spelling (a case-mismatched key decodes into the field and
	// comes back spelled the API's way).
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, nil, append(errs, fmt.Errorf("re-marshal: %w", err))
	}
	var in, back any
	if err := json.Unmarshal(j, &in); err != nil {
		return nil, nil, append(errs, err)
	}
	if err := json.Unmarshal(out, &back); err != nil {
		return nil, nil, append(errs, err)
	}
	for _, p := range keyMismatches("", in, back) {
		errs = append(errs, errors.New(p))
	}
	return j, obj, errs
}

// keyMismatches compares the object keys of in (the manifest) with those
// of out (the decoded object re-marshalled), recursively.
func keyMismatches(path string, in, out any) []string {
	var probs []string
	switch iv := in.(type) {
	case map[string]any:
		ov, ok := out.(map[string]any)
		if !ok {
			return nil // a custom type (Quantity, IntOrString...) re-marshalled differently
		}
		for k, v := range iv {
			p := path + "." + k
			if w, ok := ov[k]; ok {
				probs = append(probs, keyMismatches(p, v, w)...)
				continue
			}
			for ok := range ov {
				if strings.EqualFold(ok, k) {
					probs = append(probs, fmt.Sprintf("%s: key %q is spelled %q in the API", p, k, ok))
				}
			}
			if !isZero(v) && !slices.ContainsFunc(mapKeys(ov), func(s string) bool { return strings.EqualFold(s, k) }) {
				probs = append(probs, fmt.Sprintf("%s: non-empty value lost on decoding (unknown field?)", p))
			}
		}
	case []any:
		ov, ok := out.([]any)
		if !ok || len(ov) != len(iv) {
			return nil
		}
		for i := range iv {
			probs = append(probs, keyMismatches(path+"["+strconv.Itoa(i)+"]", iv[i], ov[i])...)
		}
	}
	return probs
}

func mapKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// isZero reports a value that omitempty drops on re-marshalling.
func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func loadManifests(t *testing.T) []doc {
	t.Helper()
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no k8s/*.yaml")
	}
	sort.Strings(files)
	var docs []doc
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := splitDocuments(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i, p := range parts {
			d := doc{file: f, n: i}
			var errs []error
			d.json, d.obj, errs = decodeStrict(p)
			for _, e := range errs {
				t.Errorf("%s: %v", d, e)
			}
			if d.obj == nil {
				t.FailNow()
			}
			docs = append(docs, d)
		}
	}
	return docs
}

func only[T any](t *testing.T, docs []doc) T {
	t.Helper()
	var found []T
	for _, d := range docs {
		if v, ok := d.obj.(T); ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("want exactly one %T among the manifests, found %d", zero, len(found))
	}
	return found[0]
}

func TestManifestsDecodeStrictly(t *testing.T) {
	docs := loadManifests(t)
	kinds := map[string]bool{}
	for _, d := range docs {
		kinds[reflect.TypeOf(d.obj).Elem().Name()] = true
	}
	for _, k := range []string{"Job", "ConfigMap", "PodMonitor", "Kustomization"} {
		if !kinds[k] {
			t.Errorf("no %s among the manifests", k)
		}
	}
}

// The strict checks catch what they should.
func TestStrictDecodingRejects(t *testing.T) {
	for _, tc := range []struct{ name, y string }{
		{"unknown field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndatas: {a: b}\n"},
		{"case mismatch", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec: {completionmode: Indexed}\n"},
		{"case mismatch, zero value", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec: {Suspend: false}\n"},
		{"duplicate key", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b, a: c}\n"},
	} {
		_, _, errs := decodeStrict([]byte(tc.y))
		if len(errs) == 0 {
			t.Errorf("%s: accepted", tc.name)
		} else {
			t.Logf("%s: rejected: %v", tc.name, errs)
		}
	}
}

func TestJob(t *testing.T) {
	docs := loadManifests(t)
	job := only[*batchv1.Job](t, docs)
	spec := job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed", spec.CompletionMode)
	}
	if spec.Completions == nil || spec.Parallelism == nil {
		t.Fatal("completions and parallelism must be set")
	}
	if spec.BackoffLimitPerIndex == nil {
		t.Error("backoffLimitPerIndex unset: the FailIndex action needs it")
	}
	if p := spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never (podFailurePolicy needs it)", p)
	}

	// Exit code 1 (an invariant violation) fails the index.
	if spec.PodFailurePolicy == nil {
		t.Fatal("no podFailurePolicy")
	}
	failIndexOn1, ignoreDisruption := false, false
	for _, r := range spec.PodFailurePolicy.Rules {
		if r.Action == batchv1.PodFailurePolicyActionFailIndex && r.OnExitCodes != nil &&
			r.OnExitCodes.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && slices.Contains(r.OnExitCodes.Values, 1) {
			failIndexOn1 = true
		}
		if r.Action == batchv1.PodFailurePolicyActionIgnore {
			for _, c := range r.OnPodConditions {
				if c.Type == corev1.DisruptionTarget {
					ignoreDisruption = true
				}
			}
		}
	}
	if !failIndexOn1 {
		t.Error("podFailurePolicy does not map exit code 1 to FailIndex")
	}
	if !ignoreDisruption {
		t.Error("podFailurePolicy does not ignore DisruptionTarget")
	}

	// One container, its args agree with completions, metrics on a named port.
	cs := spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	c := cs[0]
	if c.Image != "proxysim:latest" {
		t.Errorf("image %q", c.Image)
	}
	args := map[string]string{}
	if len(c.Args) == 0 || c.Args[0] != "stress" {
		t.Fatalf("args %q: want the stress command", c.Args)
	}
	boolFlags := map[string]bool{"--print-report": true, "--metrics-per-cpu": true, "--json": true, "--deterministic": true}
	for i := 1; i < len(c.Args); i++ {
		a := c.Args[i]
		if k, v, ok := strings.Cut(a, "="); ok {
			args[k] = v
		} else if boolFlags[a] {
			args[a] = "true"
		} else if i+1 < len(c.Args) {
			args[a] = c.Args[i+1]
			i++
		}
	}
	// A failing shard's report must outlive the pod's emptyDir.
	if args["--print-report"] != "true" || c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("a failing shard's report does not reach kubectl logs: --print-report %q, terminationMessagePolicy %q", args["--print-report"], c.TerminationMessagePolicy)
	}
	// The image is the one deploy/Dockerfile builds, as deploy/README.md says,
	// and runs as the Job's user.
	checkImage(t, c.Image, spec.Template.Spec.SecurityContext)
	if got := args["--shards"]; got != strconv.Itoa(int(*spec.Completions)) {
		t.Errorf("--shards %q, completions %d", got, *spec.Completions)
	}
	if args["--metrics-addr"] == "" || args["--log-format"] != "json" || args["--duration"] == "" {
		t.Errorf("args %q", c.Args)
	}
	var metricsPort int32
	for _, p := range c.Ports {
		if p.Name == "metrics" {
			metricsPort = p.ContainerPort
		}
	}
	if metricsPort == 0 {
		t.Fatal("no container port named metrics")
	}
	if !strings.HasSuffix(args["--metrics-addr"], ":"+strconv.Itoa(int(metricsPort))) {
		t.Errorf("--metrics-addr %q does not use the metrics port %d", args["--metrics-addr"], metricsPort)
	}
	ann := spec.Template.Annotations
	if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != strconv.Itoa(int(metricsPort)) || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("prometheus.io annotations %v", ann)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %v", c.Resources)
	}

	// The scenario ConfigMap is mounted at /etc/proxysim.
	cm := only[*corev1.ConfigMap](t, docs)
	var vol string
	for _, v := range spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
			vol = v.Name
		}
	}
	if vol == "" {
		t.Fatalf("no volume from ConfigMap %s", cm.Name)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if m.Name == vol && m.MountPath == "/etc/proxysim" {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("volume %s not mounted at /etc/proxysim", vol)
	}

	// The PodMonitor selects the Job's pods and scrapes the metrics port.
	pm := only[*monitoringv1.PodMonitor](t, docs)
	sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Empty() || !sel.Matches(labels.Set(spec.Template.Labels)) {
		t.Errorf("PodMonitor selector %v does not select the Job's pods %v", sel, spec.Template.Labels)
	}
	if len(pm.Spec.PodMetricsEndpoints) == 0 {
		t.Fatal("PodMonitor has no endpoints")
	}
	for _, ep := range pm.Spec.PodMetricsEndpoints {
		if ep.Port == nil || *ep.Port != "metrics" {
			t.Errorf("PodMonitor endpoint port %v, want metrics", ep.Port)
		}
	}
}

func TestKustomization(t *testing.T) {
	docs := loadManifests(t)
	k := only[*kusttypes.Kustomization](t, docs)
	var want []string
	for _, d := range docs {
		if _, ok := d.obj.(*kusttypes.Kustomization); !ok && d.n == 0 {
			want = append(want, filepath.Base(d.file))
		}
	}
	got := slices.Clone(k.Resources)
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, want every other manifest %v", got, want)
	}
	// kustomize's own loader accepts it too.
	data, err := os.ReadFile("k8s/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kk kusttypes.Kustomization
	if err := kk.Unmarshal(data); err != nil {
		t.Fatalf("kustomize: %v", err)
	}
	if msgs := kk.CheckDeprecatedFields(); msgs != nil && len(*msgs) > 0 {
		t.Errorf("deprecated kustomize fields: %v", *msgs)
	}
}

// scenario mirrors the keys of proxysim's scenario files
// (internal/workload/file.go) that the example uses; the main module's
// parser is the authority, this only catches typos and invalid JSON.
type scenario struct {
	Name    string   `json:"name"`
	CPUs    int      `json:"cpus"`
	Mutexes []string `json:"mutexes"`
	Groups  []struct {
		Name     string                       `json:"name"`
		Count    int                          `json:"count"`
		Policy   string                       `json:"policy"`
		Priority int                          `json:"priority"`
		CPUs     string                       `json:"cpus"`
		Slots    int                          `json:"slots"`
		Program  []map[string]json.RawMessage `json:"program"`
	} `json:"groups"`
}

var instructions = []string{"compute", "sleep", "lock", "unlock", "wake", "affinity", "setprio", "loop", "choose", "yield", "wait", "exit"}

func TestScenarioConfigMap(t *testing.T) {
	cm := only[*corev1.ConfigMap](t, loadManifests(t))
	if len(cm.Data) == 0 {
		t.Fatal("ConfigMap has no scenario")
	}
	for file, text := range cm.Data {
		if !strings.HasSuffix(file, ".json") {
			t.Errorf("%s: not a .json scenario", file)
			continue
		}
		var s scenario
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(s.Groups) == 0 {
			t.Errorf("%s: no groups", file)
		}
		for _, g := range s.Groups {
			if g.Name == "" || len(g.Program) == 0 {
				t.Errorf("%s: group %q without a name or program", file, g.Name)
			}
			for pc, ins := range g.Program {
				if len(ins) != 1 {
					t.Errorf("%s: %s[%d]: %d keys, want one", file, g.Name, pc, len(ins))
				}
				for k, v := range ins {
					if !slices.Contains(instructions, k) {
						t.Errorf("%s: %s[%d]: unknown instruction %q", file, g.Name, pc, k)
					}
					if k == "lock" || k == "unlock" {
						var m string
						if err := json.Unmarshal(v, &m); err != nil || !slices.Contains(s.Mutexes, m) {
							t.Errorf("%s: %s[%d]: %s of an undeclared mutex %s", file, g.Name, pc, k, v)
						}
					}
				}
			}
		}
	}
}

// dashboard is the part of a Grafana dashboard these checks read.
type dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource any    `json:"datasource"`
		Targets    []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile("grafana/dashboards/proxysim.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 {
		t.Errorf("uid %q title %q schemaVersion %d", d.UID, d.Title, d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Type == "query" {
			q, _ := json.Marshal(v.Query)
			if !strings.Contains(string(q), "label_values(proxysim_run_info") {
				t.Errorf("variable %s: query %s is not over proxysim_run_info", v.Name, q)
			}
		}
	}
	if vars["datasource"] != "datasource" || vars["job"] != "query" || vars["shard"] != "query" {
		t.Errorf("variables %v: want datasource, job and shard", vars)
	}
	types := map[string]int{}
	for _, p := range d.Panels {
		types[p.Type]++
		if p.Type == "row" {
			continue
		}
		ds, _ := json.Marshal(p.Datasource)
		if !strings.Contains(string(ds), "${datasource}") {
			t.Errorf("panel %q: datasource %s, want ${datasource}", p.Title, ds)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no queries", p.Title)
		}
		for _, tg := range p.Targets {
			if !strings.Contains(tg.Expr, `job=~"$job"`) || !strings.Contains(tg.Expr, `shard=~"$shard"`) {
				t.Errorf("panel %q: query %q ignores $job or $shard", p.Title, tg.Expr)
			}
		}
	}
	for _, want := range []string{"timeseries", "stat", "heatmap"} {
		if types[want] == 0 {
			t.Errorf("no %s panel", want)
		}
	}
}

// The Grafana provisioning and Prometheus files are valid YAML without
// duplicate keys (promtool checks the Prometheus files in depth).
func TestYAMLFiles(t *testing.T) {
	for _, f := range []string{
		"grafana/provisioning/dashboards.yml", "grafana/provisioning/datasources.yml",
		"prometheus/prometheus.yml", "prometheus/rules.yml", "prometheus/rules_test.yml",
	} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := yaml.YAMLToJSONStrict(data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// checkImage holds the Job's image to deploy/Dockerfile: the README's build
// command tags the image the Job runs, the Dockerfile is multi-stage,
// builds with deploy/build-binary.sh (CGO_ENABLED=0, as CI does) and runs
// as the non-root user the pod's securityContext names.
func checkImage(t *testing.T, image string, sc *corev1.PodSecurityContext) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "docker build -f deploy/Dockerfile"; !strings.Contains(string(readme), want) || !strings.Contains(string(readme), "-t "+image+" .") {
		t.Errorf("deploy/README.md does not document the build of the Job's image %s (%q ... -t %s .)", image, want, image)
	}
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var froms int
	var user string
	for _, l := range strings.Split(string(df), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "FROM" {
			froms++
		}
		if len(f) == 2 && f[0] == "USER" {
			user = f[1]
		}
	}
	if froms < 2 {
		t.Errorf("Dockerfile has %d stages, want a build stage and a runtime stage", froms)
	}
	if !strings.Contains(string(df), "deploy/build-binary.sh") {
		t.Error("Dockerfile does not build with deploy/build-binary.sh")
	}
	script, err := os.ReadFile("build-binary.sh")
	if err != nil || !strings.Contains(string(script), "CGO_ENABLED=0") {
		t.Errorf("build-binary.sh does not build a static binary (%v)", err)
	}
	if sc == nil || sc.RunAsUser == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Fatalf("the pod does not ask for a non-root user: %+v", sc)
	}
	uid, _, _ := strings.Cut(user, ":")
	if uid == "" || uid == "0" || uid == "root" || uid != strconv.FormatInt(*sc.RunAsUser, 10) {
		t.Errorf("Dockerfile USER %q, the Job runs as %d", user, *sc.RunAsUser)
	}
}
