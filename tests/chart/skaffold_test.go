package chart

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	"go.yaml.in/yaml/v3"
)

type skaffoldRelease struct {
	Name              string            `yaml:"name"`
	ChartPath         string            `yaml:"chartPath"`
	ValuesFiles       []string          `yaml:"valuesFiles"`
	SetValues         map[string]string `yaml:"setValues"`
	SetValueTemplates map[string]string `yaml:"setValueTemplates"`
	Wait              bool              `yaml:"wait"`
	DependsOn         []string          `yaml:"dependsOn"`
}

type skaffoldManifests struct {
	Helm struct {
		Releases []skaffoldRelease `yaml:"releases"`
	} `yaml:"helm"`
}

// TestSkaffoldProfiles renders the chart the way each skaffold profile deploys it: its values
// files and the images skaffold sets (repository, immutable tag and digest), filled in as
// skaffold fills its templates. Every service then runs the image built for it, pinned by
// digest; the dev profile brings the datastores its values point to.
func TestSkaffoldProfiles(t *testing.T) {
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "skaffold.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Build struct {
			TagPolicy map[string]any `yaml:"tagPolicy"`
		} `yaml:"build"`
		Profiles []struct {
			Name      string            `yaml:"name"`
			Manifests skaffoldManifests `yaml:"manifests"`
		} `yaml:"profiles"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Build.TagPolicy["inputDigest"]; !ok {
		t.Errorf("tag policy %v: want inputDigest (immutable tags)", cfg.Build.TagPolicy)
	}
	vars := map[string]string{}
	for _, svc := range services {
		key := "linkmesh_" + svc
		vars["IMAGE_REPO_"+key] = "registry.example.com/dev/linkmesh/" + svc
		vars["IMAGE_TAG_"+key] = "3f2a9c1d" + svc
		vars["IMAGE_DIGEST_"+key] = "sha256:" + strings.Repeat("ab", 32)
	}
	fill := func(s string) string {
		tpl, err := template.New("v").Funcs(template.FuncMap{"default": func(d string, v any) string {
			if s, _ := v.(string); s != "" {
				return s
			}
			return d
		}}).Option("missingkey=zero").Parse(s)
		if err != nil {
			t.Fatalf("template %q: %v", s, err)
		}
		var b bytes.Buffer
		if err := tpl.Execute(&b, vars); err != nil {
			t.Fatalf("template %q: %v", s, err)
		}
		return b.String()
	}
	seen := map[string]bool{}
	for _, p := range cfg.Profiles {
		seen[p.Name] = true
		var rel skaffoldRelease
		byName := map[string]skaffoldRelease{}
		for _, r := range p.Manifests.Helm.Releases {
			byName[r.Name] = r
			if r.ChartPath == "charts/linkmesh" {
				rel = r
			}
		}
		if rel.Name == "" {
			t.Fatalf("profile %s does not install charts/linkmesh", p.Name)
		}
		var files, sets []string
		for _, f := range rel.ValuesFiles {
			files = append(files, filepath.Join(root, fill(f)))
		}
		for k, v := range rel.SetValues {
			sets = append(sets, k+"="+v)
		}
		for k, v := range rel.SetValueTemplates {
			sets = append(sets, k+"="+fill(v))
		}
		out, err := helmTemplateArgs(t, true, nil, files, sets...)
		if err != nil {
			t.Fatalf("profile %s: %v", p.Name, err)
		}
		m := manifests{objects: parse(t, out)}
		for svc, d := range m.deployments(t) {
			want := vars["IMAGE_REPO_linkmesh_"+svc] + ":" + vars["IMAGE_TAG_linkmesh_"+svc] + "@" + vars["IMAGE_DIGEST_linkmesh_"+svc]
			if got := d.Spec.Template.Spec.Containers[0].Image; got != want {
				t.Errorf("profile %s: %s runs %s, want %s", p.Name, svc, got, want)
			}
		}
		if p.Name == "dev" {
			// The datastores the dev values point to, installed and ready before the chart
			// (whose migration Job needs MongoDB).
			ds, ok := byName["linkmesh-datastores"]
			if !ok || ds.ChartPath != "deploy/dev/datastores" || !ds.Wait || !slices.Contains(rel.DependsOn, ds.Name) {
				t.Errorf("dev profile: datastores %+v, chart depends on %v", ds, rel.DependsOn)
			}
			out, err := exec.Command(helmBin(t), "template", ds.Name, filepath.Join(root, ds.ChartPath)).CombinedOutput()
			if err != nil {
				t.Fatalf("helm template %s: %v\n%s", ds.ChartPath, err, out)
			}
			dsm := manifests{objects: parse(t, out)}
			mongo := dsm.must(t, "Service", "mongodb")
			if v, _ := value(mongo.raw, "spec.publishNotReadyAddresses").(bool); !v {
				t.Error("the dev MongoDB's member name would not resolve before it is ready")
			}
			dsm.must(t, "StatefulSet", "mongodb")
			dsm.must(t, "Service", "redis")
		}
	}
	for _, want := range []string{"dev", "prod"} {
		if !seen[want] {
			t.Errorf("no skaffold profile %s", want)
		}
	}
}
