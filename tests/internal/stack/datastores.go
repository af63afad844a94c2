package stack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Datastores are a running Redis server and a MongoDB wire-protocol server
// (FerretDB v2 on PostgreSQL with DocumentDB).
type Datastores struct {
	MongoURI    string // mongodb://127.0.0.1:<port>/; empty if Mongo was skipped
	RedisURL    string // redis://127.0.0.1:<port>/0; empty if Redis was skipped
	PostgresURL string // the PostgreSQL server under FerretDB, for debugging with psql
	Dir         string // data directory
	LogDir      string // where the datastores' logs are (Dir/logs)

	logger   *slog.Logger
	redis    *process
	postgres *process
	ferret   *ferretServer
	stopOnce sync.Once
}

// DatastoresOptions selects what StartDatastoresWithOptions starts.
type DatastoresOptions struct {
	Dir       string       // data directory, created if missing
	Logger    *slog.Logger // nil discards our own log lines
	SkipRedis bool         // don't start Redis (e.g. an external one is used)
	SkipMongo bool         // don't start PostgreSQL and FerretDB
}

// StartDatastores starts redis-server, a PostgreSQL cluster (initialised into
// dir/postgres on first use, run as the `postgres` OS user when we are root)
// and an in-process FerretDB on free loopback ports, and waits until each
// answers. dir is created if missing and keeps PostgreSQL's data across runs;
// logs go to dir/logs. ctx bounds startup only: the datastores run until Stop.
func StartDatastores(ctx context.Context, dir string, logger *slog.Logger) (*Datastores, error) {
	return StartDatastoresWithOptions(ctx, DatastoresOptions{Dir: dir, Logger: logger})
}

// StartDatastoresWithOptions is StartDatastores with the choice to skip Redis
// or Mongo, for runs that point at an external one. On failure it stops
// whatever it had started.
func StartDatastoresWithOptions(ctx context.Context, opts DatastoresOptions) (_ *Datastores, err error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("start datastores: resolve data dir: %w", err)
	}
	logsDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logsDir, 0o755); err != nil {
		return nil, fmt.Errorf("start datastores: create log dir: %w", err)
	}
	d := &Datastores{Dir: dir, LogDir: logsDir, logger: logger}
	defer func() {
		if err != nil {
			d.Stop()
		}
	}()

	// Redis and PostgreSQL start in parallel: PostgreSQL dominates start-up
	// time and the two don't depend on each other.
	var wg sync.WaitGroup
	var redisErr error
	if !opts.SkipRedis {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			d.redis, d.RedisURL, redisErr = startRedis(ctx, dir, logsDir, logger)
			if redisErr == nil {
				logger.Info("redis ready", "url", d.RedisURL, "pid", d.redis.pid(), "took", time.Since(start).Round(time.Millisecond))
			}
		}()
	}
	if !opts.SkipMongo {
		if err := d.startMongo(ctx, dir, logsDir); err != nil {
			wg.Wait()
			return nil, err
		}
	}
	wg.Wait()
	if redisErr != nil {
		return nil, redisErr
	}
	return d, nil
}

// startMongo starts PostgreSQL and then FerretDB on top of it.
func (d *Datastores) startMongo(ctx context.Context, dir, logsDir string) error {
	start := time.Now()
	pg, port, err := startPostgres(ctx, dir, logsDir, 0, d.logger)
	if err != nil {
		return err
	}
	d.postgres = pg
	d.PostgresURL = postgresURL(port)
	d.logger.Info("postgres ready", "url", d.PostgresURL, "pid", pg.pid(), "took", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	ferret, err := startFerretDB(ctx, d.PostgresURL, dir, logsDir, "")
	if err != nil {
		return err
	}
	d.ferret = ferret
	d.MongoURI = ferret.uri
	d.logger.Info("ferretdb ready", "uri", d.MongoURI, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// Stop stops what StartDatastores started: FerretDB, then PostgreSQL with a
// "fast" shutdown (SIGINT) so the cluster is left clean, then Redis. It
// signals by PID, waits for each to exit and is safe to call twice.
func (d *Datastores) Stop() {
	if d == nil {
		return
	}
	d.stopOnce.Do(func() {
		d.ferret.stop()
		// Fast shutdown checkpoints and exits; a clean stop means the next
		// start skips crash recovery.
		d.postgres.stop(syscall.SIGINT, 30*time.Second)
		d.redis.stop(syscall.SIGTERM, 10*time.Second)
		d.logger.Info("datastores stopped", "dir", d.Dir)
	})
}

// CrashMongo takes the MongoDB wire server away as the loss of its machine would:
// PostgreSQL shuts down at once (SIGQUIT: no checkpoint, crash recovery at its next start)
// and FerretDB stops listening. StartMongoAgain brings both back on their ports.
func (d *Datastores) CrashMongo() {
	d.postgres.stop(syscall.SIGQUIT, 10*time.Second)
	d.ferret.stop()
}

// StartMongoAgain starts PostgreSQL and FerretDB on the ports they had before CrashMongo.
func (d *Datastores) StartMongoAgain(ctx context.Context) error {
	pgPort, err := portOf(d.PostgresURL)
	if err != nil {
		return err
	}
	mongoPort, err := portOf(d.MongoURI)
	if err != nil {
		return err
	}
	pg, _, err := startPostgres(ctx, d.Dir, d.LogDir, pgPort, d.logger)
	if err != nil {
		return err
	}
	d.postgres = pg
	ferret, err := startFerretDB(ctx, d.PostgresURL, d.Dir, d.LogDir, net.JoinHostPort("127.0.0.1", strconv.Itoa(mongoPort)))
	if err != nil {
		return err
	}
	d.ferret = ferret
	return nil
}

// portOf is the port of a datastore URL.
func portOf(raw string) (int, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(u.Port())
}

// PausePostgres stops PostgreSQL and every backend (SIGSTOP; each backend is a session of
// its own, so the postmaster's children are found in /proc): the MongoDB wire server stays up
// but every query waits, as on a stalled database machine.
func (d *Datastores) PausePostgres() error { return d.signalPostgres(syscall.SIGSTOP) }

// ResumePostgres lets a paused PostgreSQL go on.
func (d *Datastores) ResumePostgres() error { return d.signalPostgres(syscall.SIGCONT) }

func (d *Datastores) signalPostgres(sig syscall.Signal) error {
	master := d.postgres.pid()
	pids := []int{master}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so read after its closing paren.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(master) {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && pid == master {
			return err
		}
	}
	return nil
}
