package stack

import (
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// postgresOwner is the OS identity PostgreSQL runs as. postgres refuses to
// run as root, so when we are root it runs as the `postgres` user.
type postgresOwner struct {
	cred *syscall.Credential // nil: run as ourselves
}

// newPostgresOwner picks the identity for initdb and postgres.
func newPostgresOwner() (postgresOwner, error) {
	if os.Geteuid() != 0 {
		return postgresOwner{}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return postgresOwner{}, fmt.Errorf("running as root, PostgreSQL needs the `postgres` OS user: %w; %s", err, installHint)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return postgresOwner{}, fmt.Errorf("parse uid of postgres user: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return postgresOwner{}, fmt.Errorf("parse gid of postgres user: %w", err)
	}
	// NoSetGroups is false, so Groups (empty) replaces root's supplementary groups.
	return postgresOwner{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}, nil
}

// prepareDir creates dir with mode and, when running as another user, hands
// it (recursively, if it isn't already theirs) to that user and makes every
// ancestor searchable by them.
func (o postgresOwner) prepareDir(dir string, mode os.FileMode, logger *slog.Logger) error {
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// MkdirAll leaves an existing directory's mode alone; postgres insists on
	// 0700/0750 for its data directory.
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("chmod %s: %w", dir, err)
	}
	if o.cred == nil {
		return nil
	}
	if err := o.chownTree(dir); err != nil {
		return err
	}
	return o.makeSearchable(filepath.Dir(dir), logger)
}

// chownTree gives dir and everything under it to the postgres user, skipping
// the walk when dir already belongs to them (the common warm start).
func (o postgresOwner) chownTree(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == o.cred.Uid && st.Gid == o.cred.Gid {
		return nil
	}
	err = filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(o.cred.Uid), int(o.cred.Gid))
	})
	if err != nil {
		return fmt.Errorf("chown %s to postgres: %w", dir, err)
	}
	return nil
}

// makeSearchable adds the "others may search" bit to dir and its ancestors
// where the postgres user could not otherwise traverse them (for example the
// 0700 directories made by t.TempDir), because postgres must chdir into its
// data directory. Only search (x), never read, is granted, and each change is
// logged.
func (o postgresOwner) makeSearchable(dir string, logger *slog.Logger) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", dir, err)
	}
	for p := abs; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if !o.canSearch(fi) {
			mode := fi.Mode().Perm() | 0o001
			if err := os.Chmod(p, mode); err != nil {
				return fmt.Errorf("let postgres user traverse %s: %w", p, err)
			}
			logger.Info("granted search permission so the postgres user can reach its data directory", "dir", p, "mode", fmt.Sprintf("%#o", mode))
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// canSearch reports whether the postgres user may traverse a directory.
func (o postgresOwner) canSearch(fi os.FileInfo) bool {
	perm := fi.Mode().Perm()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return perm&0o001 != 0
	}
	switch {
	case st.Uid == o.cred.Uid:
		return perm&0o100 != 0
	case st.Gid == o.cred.Gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}
