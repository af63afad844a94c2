package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresReadyTimeout bounds crash recovery after an unclean stop, which can
// take a while on a slow disk.
const postgresReadyTimeout = 60 * time.Second

// maxSocketPath is the longest usable unix socket path (sun_path is 108 bytes
// including the terminating NUL).
const maxSocketPath = 107

// startPostgres initialises dir/postgres on first use and starts a postgres
// server on loopback port fixed, or on a free one when fixed is 0. It returns the process
// and its port.
func startPostgres(ctx context.Context, dir, logsDir string, fixed int, logger *slog.Logger) (*process, int, error) {
	binDir, err := postgresBinDir()
	if err != nil {
		return nil, 0, err
	}
	owner, err := newPostgresOwner()
	if err != nil {
		return nil, 0, err
	}
	dataDir := filepath.Join(dir, "postgres")
	if err := setAsideOldStore(dataDir, logger); err != nil {
		return nil, 0, err
	}
	if err := initPostgres(ctx, binDir, dataDir, logsDir, owner, logger); err != nil {
		return nil, 0, err
	}
	socketDir := filepath.Join(dir, "postgres-socket")
	if len(socketDir)+len("/.s.PGSQL.65535") > maxSocketPath {
		// Only TCP is used; the socket is a convenience for psql.
		logger.Info("data directory path too long for a unix socket; postgres will listen on TCP only", "dir", socketDir)
		socketDir = ""
	} else if err := owner.prepareDir(socketDir, 0o700, logger); err != nil {
		return nil, 0, err
	}
	if err := removeStalePostmasterPID(dataDir, logger); err != nil {
		return nil, 0, err
	}

	for attempt := 1; ; attempt++ {
		port := fixed
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, 0, err
			}
		}
		p, err := startProcess(processSpec{
			name: "postgres",
			path: filepath.Join(binDir, "postgres"),
			args: append([]string{
				"-D", dataDir,
				"-p", strconv.Itoa(port),
				"-c", "listen_addresses=127.0.0.1",
				"-c", "unix_socket_directories=" + socketDir,
				// Surviving the loss of the machine is not needed for local runs and tests;
				// speed is, so nothing is flushed to disk. A commit is still written to the
				// operating system before it is acknowledged (synchronous_commit on costs a
				// write, not a flush, without fsync), so a crash of PostgreSQL itself — which
				// the drills cause — loses nothing acknowledged, as on a production server.
				"-c", "fsync=off",
				"-c", "full_page_writes=off",
			}, documentDBSettings...),
			env:     postgresEnv(),
			dir:     dataDir,
			logPath: filepath.Join(logsDir, "postgres.log"),
			cred:    owner.cred,
		})
		if err != nil {
			return nil, 0, err
		}
		url := postgresURL(port)
		err = waitReady(ctx, p, postgresReadyTimeout, func(ctx context.Context) error {
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				return err
			}
			defer conn.Close(context.WithoutCancel(ctx))
			return conn.Ping(ctx)
		})
		if err == nil {
			if err := ensureDocumentDB(ctx, url, dataDir); err != nil {
				p.stop(syscall.SIGINT, 10*time.Second)
				return nil, 0, fmt.Errorf("start postgres: %w", err)
			}
			return p, port, nil
		}
		p.stop(syscall.SIGQUIT, 5*time.Second)
		if attempt < 3 && fixed == 0 && p.addrInUse() {
			logger.Info("postgres port was taken, retrying", "port", port)
			continue
		}
		return nil, 0, fmt.Errorf("start postgres: %w", err)
	}
}

// postgresURL is how FerretDB and readiness checks reach the server. Local
// clusters use trust authentication on loopback, so no password is needed.
func postgresURL(port int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres", port)
}

// postgresEnv is a minimal environment with a C locale, so initdb and
// postgres behave the same whatever the caller's locale settings are.
func postgresEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "LANG=C", "LC_ALL=C", "TZ=UTC"}
}

// initPostgres runs initdb unless dataDir already holds a cluster.
func initPostgres(ctx context.Context, binDir, dataDir, logsDir string, owner postgresOwner, logger *slog.Logger) error {
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err == nil {
		return owner.prepareDir(dataDir, 0o700, logger)
	}
	// initdb cleans up after itself on failure, but a killed initdb can leave
	// a partial directory without PG_VERSION that initdb would refuse.
	if err := os.RemoveAll(dataDir); err != nil {
		return fmt.Errorf("remove incomplete postgres data dir: %w", err)
	}
	if err := owner.prepareDir(dataDir, 0o700, logger); err != nil {
		return err
	}
	logger.Info("initialising postgres cluster", "dir", dataDir)
	p, err := startProcess(processSpec{
		name: "initdb",
		path: filepath.Join(binDir, "initdb"),
		args: []string{
			"-D", dataDir,
			"--username=postgres",
			"--auth=trust",
			"--encoding=UTF8",
			"--locale=C",
			"--no-sync",
			"--no-instructions",
		},
		env:     postgresEnv(),
		dir:     dataDir,
		logPath: filepath.Join(logsDir, "initdb.log"),
		cred:    owner.cred,
	})
	if err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		p.stop(syscall.SIGTERM, 5*time.Second)
		return fmt.Errorf("initdb: %w", ctx.Err())
	}
	if p.waitErr != nil {
		return p.withTail(fmt.Errorf("initdb: %w", p.waitErr))
	}
	return nil
}

// removeStalePostmasterPID deletes postmaster.pid left by a killed server so
// it cannot block the next start. A file whose PID belongs to a live postgres
// means the cluster is in use, which is reported instead.
func removeStalePostmasterPID(dataDir string, logger *slog.Logger) error {
	path := filepath.Join(dataDir, "postmaster.pid")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err == nil && pid > 0 && isPostgresProcess(pid) {
		return fmt.Errorf("postgres (pid %d) is already running on %s; stop it first", pid, dataDir)
	}
	logger.Info("removing stale postmaster.pid", "path", path, "pid", first)
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale %s: %w", path, err)
	}
	return nil
}

// isPostgresProcess reports whether pid is alive and is a postgres server
// (a recycled PID of some other program does not count).
func isPostgresProcess(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		// Without /proc (non-Linux) trust the liveness check.
		return true
	}
	return strings.HasPrefix(strings.TrimSpace(string(comm)), "postgres")
}
