package chart

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	release     = "demo"
	namespace   = "linkmesh"
	kubeVersion = "1.35.4"
	// fullname is <release>-<chart>, the prefix of every resource name.
	fullname = release + "-linkmesh"
)

// services in port order, as the chart lists them.
var services = []string{"gateway", "auth", "link", "analytics", "moderation", "quota"}

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "charts", "linkmesh", "Chart.yaml")); err != nil {
		t.Fatalf("repository root not found from %s: %v", root, err)
	}
	return root
}

func chartDir(t testing.TB) string { return filepath.Join(repoRoot(t), "charts", "linkmesh") }

// helmBin is the helm binary of LINKMESH_HELM.
func helmBin(t testing.TB) string { return toolBin(t, "LINKMESH_HELM", "helm") }

// toolBin is the binary the environment variable env names (make chart-check and make test set
// it to .tools/bin/<name>). Without it the test skips, or fails when
// LINKMESH_REQUIRE_INTEGRATION is set (make test).
func toolBin(t testing.TB, env, name string) string {
	t.Helper()
	h := os.Getenv(env)
	if h == "" {
		if os.Getenv("LINKMESH_REQUIRE_INTEGRATION") != "" {
			t.Fatalf("%s is not set; run deploy/tools/install.sh and set it to .tools/bin/%s (make chart-check does)", env, name)
		}
		t.Skip(env + " not set")
	}
	if _, err := os.Stat(h); err != nil {
		t.Fatalf("%s=%s: %v", env, h, err)
	}
	return h
}

// valueSets are the chart's CI value sets, by name (file name without -values.yaml).
func valueSets(t testing.TB) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir(t), "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("want at least three value sets in ci/, have %v", files)
	}
	sets := map[string]string{}
	for _, f := range files {
		sets[strings.TrimSuffix(filepath.Base(f), "-values.yaml")] = f
	}
	for _, want := range []string{"default", "minimal", "production"} {
		if _, ok := sets[want]; !ok {
			t.Fatalf("value set ci/%s-values.yaml missing", want)
		}
	}
	return sets
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// helmTemplate runs helm template with the value files and --set arguments given.
func helmTemplate(t testing.TB, files []string, sets ...string) ([]byte, error) {
	t.Helper()
	return helmTemplateWith(t, nil, files, sets...)
}

// helmTemplateWith runs helm template with the further arguments extra (such as a kubeconfig
// for lookup), the value files and the --set arguments given.
func helmTemplateWith(t testing.TB, extra, files []string, sets ...string) ([]byte, error) {
	t.Helper()
	return helmTemplateArgs(t, false, extra, files, sets...)
}

// helmTemplateArgs is helmTemplateWith, without the required values when bare.
func helmTemplateArgs(t testing.TB, bare bool, extra, files []string, sets ...string) ([]byte, error) {
	t.Helper()
	args := []string{"template", release, chartDir(t), "--namespace", namespace, "--kube-version", kubeVersion}
	// The values every installation must give (image.repository, the datastores, a source of
	// keys) come first, so that a test states only what it is about; TestRequiredValues
	// renders without them.
	if !bare {
		args = append(args, "-f", filepath.Join(chartDir(t), "ci", "default-values.yaml"))
	}
	args = append(args, extra...)
	for _, f := range files {
		args = append(args, "-f", f)
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(helmBin(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// manifests is one rendering, its objects in order.
type manifests struct {
	objects []object
	values  map[string]any // the values it was rendered with (helm's computed values)
}

type object struct {
	APIVersion string         `yaml:"apiVersion"`
	Kind       string         `yaml:"kind"`
	Metadata   objectMeta     `yaml:"metadata"`
	node       *yaml.Node     // the whole document, to decode into a kind's type
	raw        map[string]any // the whole document
}

type objectMeta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func (o object) decode(t testing.TB, into any) {
	t.Helper()
	if err := o.node.Decode(into); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Metadata.Name, err)
	}
}

func parse(t testing.TB, out []byte) []object {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(out))
	var objs []object
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("rendered YAML: %v", err)
		}
		if len(n.Content) == 0 || (n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null") {
			continue
		}
		var o object
		if err := n.Decode(&o); err != nil {
			t.Fatalf("rendered YAML: %v", err)
		}
		if err := n.Decode(&o.raw); err != nil {
			t.Fatalf("rendered YAML: %v", err)
		}
		if o.Kind == "" || o.APIVersion == "" || o.Metadata.Name == "" {
			t.Fatalf("rendered document without apiVersion, kind or name: %v", o.raw)
		}
		node := n
		o.node = &node
		objs = append(objs, o)
	}
	return objs
}

// render renders files and sets and parses the result; it fails the test on an error.
func render(t testing.TB, files []string, sets ...string) manifests {
	t.Helper()
	out, err := helmTemplate(t, files, sets...)
	if err != nil {
		t.Fatal(err)
	}
	return manifests{objects: parse(t, out), values: computedValues(t, files, sets)}
}

var (
	renderedMu sync.Mutex
	rendered   = map[string]manifests{}
)

// renderSet renders the CI value set name once per test binary.
func renderSet(t testing.TB, name string) manifests {
	t.Helper()
	renderedMu.Lock()
	defer renderedMu.Unlock()
	if m, ok := rendered[name]; ok {
		return m
	}
	m := render(t, []string{valueSets(t)[name]})
	rendered[name] = m
	return m
}

// computedValues are the chart's values.yaml overlaid with files (not --set, which the tests
// use only for small changes they know).
func computedValues(t testing.TB, files []string, _ []string) map[string]any {
	t.Helper()
	var base map[string]any
	readYAML(t, filepath.Join(chartDir(t), "values.yaml"), &base)
	for _, f := range files {
		var over map[string]any
		readYAML(t, f, &over)
		base = merge(base, over)
	}
	return base
}

func readYAML(t testing.TB, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// merge overlays over on base as Helm does: maps merge, everything else is replaced.
func merge(base, over map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		bm, bok := out[k].(map[string]any)
		om, ook := v.(map[string]any)
		if bok && ook {
			out[k] = merge(bm, om)
		} else {
			out[k] = v
		}
	}
	return out
}

// value returns the value at a dotted path of m, nil when absent.
func value(m map[string]any, path string) any {
	var cur any = m
	for _, p := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

func (m manifests) all(kind string) []object {
	var out []object
	for _, o := range m.objects {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func (m manifests) find(kind, name string) (object, bool) {
	for _, o := range m.objects {
		if o.Kind == kind && o.Metadata.Name == name {
			return o, true
		}
	}
	return object{}, false
}

func (m manifests) must(t testing.TB, kind, name string) object {
	t.Helper()
	o, ok := m.find(kind, name)
	if !ok {
		t.Fatalf("no %s %s rendered", kind, name)
	}
	return o
}

// The parts of the Kubernetes types the tests read.

type labelSelector struct {
	MatchLabels      map[string]string `yaml:"matchLabels"`
	MatchExpressions []any             `yaml:"matchExpressions"`
}

type deployment struct {
	Spec struct {
		Replicas *int          `yaml:"replicas"`
		Selector labelSelector `yaml:"selector"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     podSpec    `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type pod struct {
	Metadata objectMeta `yaml:"metadata"`
	Spec     podSpec    `yaml:"spec"`
}

type podSpec struct {
	ServiceAccountName            string           `yaml:"serviceAccountName"`
	AutomountServiceAccountToken  *bool            `yaml:"automountServiceAccountToken"`
	EnableServiceLinks            *bool            `yaml:"enableServiceLinks"`
	SecurityContext               *securityContext `yaml:"securityContext"`
	TerminationGracePeriodSeconds *int             `yaml:"terminationGracePeriodSeconds"`
	TopologySpreadConstraints     []struct {
		TopologyKey       string        `yaml:"topologyKey"`
		WhenUnsatisfiable string        `yaml:"whenUnsatisfiable"`
		MaxSkew           int           `yaml:"maxSkew"`
		LabelSelector     labelSelector `yaml:"labelSelector"`
	} `yaml:"topologySpreadConstraints"`
	InitContainers []container `yaml:"initContainers"`
	Containers     []container `yaml:"containers"`
	Volumes        []struct {
		Name     string         `yaml:"name"`
		EmptyDir map[string]any `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type securityContext struct {
	RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
	RunAsUser                *int  `yaml:"runAsUser"`
	RunAsGroup               *int  `yaml:"runAsGroup"`
	FSGroup                  *int  `yaml:"fsGroup"`
	ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	Privileged               *bool `yaml:"privileged"`
	Capabilities             *struct {
		Add  []string `yaml:"add"`
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
	SeccompProfile *struct {
		Type string `yaml:"type"`
	} `yaml:"seccompProfile"`
}

type container struct {
	Name            string           `yaml:"name"`
	Image           string           `yaml:"image"`
	SecurityContext *securityContext `yaml:"securityContext"`
	Ports           []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env     []envVar `yaml:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
		SecretRef map[string]any `yaml:"secretRef"`
	} `yaml:"envFrom"`
	StartupProbe   *probe `yaml:"startupProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]any `yaml:"requests"`
		Limits   map[string]any `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom *struct {
		SecretKeyRef *struct {
			Name     string `yaml:"name"`
			Key      string `yaml:"key"`
			Optional *bool  `yaml:"optional"`
		} `yaml:"secretKeyRef"`
		ConfigMapKeyRef map[string]any `yaml:"configMapKeyRef"`
		FieldRef        map[string]any `yaml:"fieldRef"`
	} `yaml:"valueFrom"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type service struct {
	Spec struct {
		Type      string            `yaml:"type"`
		ClusterIP string            `yaml:"clusterIP"`
		Selector  map[string]string `yaml:"selector"`
		Ports     []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type configMap struct {
	Data map[string]string `yaml:"data"`
}

type secret struct {
	Data map[string]string `yaml:"data"`
}

// deployments are the rendered Deployments by service (component label).
func (m manifests) deployments(t testing.TB) map[string]deployment {
	t.Helper()
	out := map[string]deployment{}
	for _, o := range m.all("Deployment") {
		var d deployment
		o.decode(t, &d)
		out[o.Metadata.Labels["app.kubernetes.io/component"]] = d
	}
	return out
}

// env is what a service's container sees: its ConfigMap (envFrom) and its env entries, by name,
// with "secret:<key>" for a secretKeyRef.
func (m manifests) env(t testing.TB, svc string) map[string]string {
	t.Helper()
	d, ok := m.deployments(t)[svc]
	if !ok {
		t.Fatalf("no Deployment of %s", svc)
	}
	out := map[string]string{}
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil {
				t.Errorf("%s: envFrom a Secret hands the container every key of it", svc)
			}
			if ef.ConfigMapRef == nil {
				continue
			}
			var cm configMap
			m.must(t, "ConfigMap", ef.ConfigMapRef.Name).decode(t, &cm)
			for k, v := range cm.Data {
				out[k] = v
			}
		}
		for _, e := range c.Env {
			switch {
			case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
				out[e.Name] = "secret:" + e.ValueFrom.SecretKeyRef.Key
			default:
				out[e.Name] = e.Value
			}
		}
	}
	return out
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
