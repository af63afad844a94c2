package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestPromtoolRuleTests renders the chart's PrometheusRule as an operator gets it (the
// chart's replacements and its absent() group included), checks it with promtool check rules
// and runs the unit tests of testdata/alerts.test.yaml against it with promtool test rules.
// The annotations are left out of the tested copy: promtool compares them in full, and their
// templates are checked by tests/observability.
func TestPromtoolRuleTests(t *testing.T) {
	promtool := toolBin(t, "LINKMESH_PROMTOOL", "promtool")
	m := render(t, nil, "prometheusRule.enabled=true", "serviceMonitor.enabled=true")
	rule := m.must(t, "PrometheusRule", fullname)
	spec, _ := rule.raw["spec"].(map[string]any)
	groups, _ := spec["groups"].([]any)
	if len(groups) == 0 {
		t.Fatal("the PrometheusRule has no groups")
	}
	absent := 0
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			if a, ok := r["annotations"].(map[string]any); ok {
				if r["alert"] != nil && !strings.HasPrefix(a["runbook_url"].(string), "https://") {
					t.Errorf("alert %v: runbook_url %v", r["alert"], a["runbook_url"])
				}
				delete(r, "annotations")
			}
			if r["alert"] == "LinkmeshServiceAbsent" {
				absent++
			}
		}
	}
	if absent != len(services) {
		t.Errorf("%d LinkmeshServiceAbsent rules, want one per service (%d)", absent, len(services))
	}
	dir := t.TempDir()
	out, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join("testdata", "alerts.test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts.test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}
}

// Every alert the PrometheusRule carries has its entry in RUNBOOK.md, where its runbook_url
// points.
func TestRunbookCoversEveryAlert(t *testing.T) {
	m := render(t, nil, "prometheusRule.enabled=true", "serviceMonitor.enabled=true")
	book, err := os.ReadFile(filepath.Join(chartDir(t), "RUNBOOK.md"))
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := m.must(t, "PrometheusRule", fullname).raw["spec"].(map[string]any)
	alerts := 0
	for _, g := range spec["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			name, _ := r.(map[string]any)["alert"].(string)
			if name == "" {
				continue
			}
			alerts++
			url := r.(map[string]any)["annotations"].(map[string]any)["runbook_url"].(string)
			if !strings.HasSuffix(url, "RUNBOOK.md#"+strings.ToLower(name)) {
				t.Errorf("alert %s: runbook_url %s", name, url)
			}
			if !strings.Contains(string(book), "\n## "+name+"\n") {
				t.Errorf("RUNBOOK.md has no entry for %s", name)
			}
		}
	}
	if alerts == 0 {
		t.Fatal("no alerts rendered")
	}
}

// Without the ServiceMonitor, Prometheus scrapes no target of the release (as far as the
// chart knows): the absent() alerts would fire for ever, so they are left out.
func TestAbsentAlertsNeedTheServiceMonitor(t *testing.T) {
	m := render(t, nil, "prometheusRule.enabled=true", "serviceMonitor.enabled=false")
	spec, _ := m.must(t, "PrometheusRule", fullname).raw["spec"].(map[string]any)
	for _, g := range spec["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			if r.(map[string]any)["alert"] == "LinkmeshServiceAbsent" {
				t.Fatal("LinkmeshServiceAbsent without a ServiceMonitor")
			}
		}
	}
}
