package stack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
)

// lookBinary finds a system binary in PATH, then /usr/bin and /usr/sbin
// (which may be missing from a minimal PATH, e.g. under sudo or in CI).
func lookBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/bin", "/usr/sbin"} {
		p := filepath.Join(dir, name)
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in PATH, /usr/bin or /usr/sbin; %s", name, installHint)
}

// postgresBinDir returns the directory holding initdb and postgres: the one in
// PATH if both are there, else the newest /usr/lib/postgresql/<version>/bin,
// where Debian installs server binaries outside PATH.
func postgresBinDir() (string, error) {
	if p, err := exec.LookPath("postgres"); err == nil {
		dir := filepath.Dir(p)
		if isExecutable(filepath.Join(dir, "initdb")) {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	type candidate struct {
		dir     string
		version float64
	}
	var found []candidate
	for _, dir := range matches {
		if !isExecutable(filepath.Join(dir, "postgres")) || !isExecutable(filepath.Join(dir, "initdb")) {
			continue
		}
		// Versions are "15" or "9.6"; parse numerically so 15 sorts after 9.6.
		v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
		if err != nil {
			continue
		}
		found = append(found, candidate{dir: dir, version: v})
	}
	if len(found) == 0 {
		return "", fmt.Errorf("postgres and initdb not found in PATH or /usr/lib/postgresql/*/bin; %s", installHint)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].version > found[j].version })
	return found[0].dir, nil
}

// isExecutable reports whether path is a regular file with an execute bit.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
