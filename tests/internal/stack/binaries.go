package stack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// postgresBinDir returns the directory holding initdb and postgres of the PostgreSQL release
// the store's DocumentDB extension is built for (deploy/local/install-store.sh), where
// Debian installs server binaries outside PATH.
func postgresBinDir() (string, error) {
	dir := filepath.Join("/usr/lib/postgresql", postgresMajor, "bin")
	if !isExecutable(filepath.Join(dir, "postgres")) || !isExecutable(filepath.Join(dir, "initdb")) {
		return "", fmt.Errorf("PostgreSQL %s not found in %s; %s", postgresMajor, dir, installHint)
	}
	return dir, nil
}

// isExecutable reports whether path is a regular file with an execute bit.
func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// BinDir is where `make build` put the service binaries: LINKMESH_BIN_DIR, else ./bin of the
// repository, seen from a package two levels below it (tests/<pkg>).
func BinDir() string {
	if d := os.Getenv("LINKMESH_BIN_DIR"); d != "" {
		return d
	}
	d, _ := filepath.Abs("../../bin")
	return d
}
