package stack

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
)

// Bench is a whole stack in a temporary directory, for a benchmark: the datastores and the
// six services, logging warnings only.
type Bench struct {
	Dir        string
	Datastores *Datastores
	Services   *Services
}

// StartBench starts a Bench for the named benchmark. opts needs BinDir and may add Env and
// Wrap; the datastores, the database prefix and the log directory are filled in.
func StartBench(ctx context.Context, name string, opts ServicesOptions) (_ *Bench, err error) {
	if opts.BinDir, err = filepath.Abs(opts.BinDir); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "linkmesh-"+name+"-")
	if err != nil {
		return nil, err
	}
	b := &Bench{Dir: dir}
	defer func() {
		if err != nil {
			b.Stop()
		}
	}()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if b.Datastores, err = StartDatastores(ctx, filepath.Join(dir, "data"), log); err != nil {
		return nil, err
	}
	opts.MongoURI, opts.RedisURL, opts.DatabasePrefix, opts.LogDir = b.Datastores.MongoURI, b.Datastores.RedisURL, "bench", dir
	if opts.Env == nil {
		opts.Env = map[string]string{}
	}
	opts.Env["LINKMESH_LOG_LEVEL"] = "warn"
	if b.Services, err = StartServices(ctx, opts); err != nil {
		return nil, err
	}
	return b, nil
}

// Stop stops what was started and removes the directory.
func (b *Bench) Stop() {
	if b.Services != nil {
		b.Services.Stop()
	}
	if b.Datastores != nil {
		b.Datastores.Stop()
	}
	_ = os.RemoveAll(b.Dir)
}
