// Package docs keeps the README in step with the code.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var (
	envTag      = regexp.MustCompile("`[^`]*env:\"(LINKMESH_[A-Z0-9_]+)\"")
	settingsRow = regexp.MustCompile("(?m)^\\| (`LINKMESH_[^|]+)\\|")
	varName     = regexp.MustCompile("LINKMESH_[A-Z0-9_]+")
)

// Every setting a service reads (an env tag in pkg/config or a service's config) is a row of
// the README's settings table, and every row names a setting some service reads.
func TestReadmeSettingsMatchTheCode(t *testing.T) {
	root := filepath.Join("..", "..")
	inCode := map[string]bool{}
	dirs, err := filepath.Glob(filepath.Join(root, "services", "*", "internal", "config"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no service config packages found: %v", err)
	}
	for _, dir := range append(dirs, filepath.Join(root, "pkg", "config")) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range envTag.FindAllStringSubmatch(string(src), -1) {
				inCode[m[1]] = true
			}
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	inReadme := map[string]bool{}
	for _, row := range settingsRow.FindAllStringSubmatch(string(readme), -1) {
		for _, name := range varName.FindAllString(row[1], -1) {
			inReadme[name] = true
		}
	}
	if len(inCode) < 20 || len(inReadme) < 20 {
		t.Fatalf("found %d settings in code and %d in the README; the scan is broken", len(inCode), len(inReadme))
	}
	if missing := diff(inCode, inReadme); len(missing) > 0 {
		t.Errorf("settings read by the code but missing from the README's table: %v", missing)
	}
	if stale := diff(inReadme, inCode); len(stale) > 0 {
		t.Errorf("README rows naming settings no code reads: %v", stale)
	}
}

func diff(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
