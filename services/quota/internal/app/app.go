// Package app wires the quota service together: telemetry, logging, datastores, the window
// rules, the HTTP server and the bucket sweeper.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/logging"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/redisdb"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/pkg/telemetry"
	"github.com/linkmesh/linkmesh/services/quota/internal/config"
	quotahttp "github.com/linkmesh/linkmesh/services/quota/internal/http"
	"github.com/linkmesh/linkmesh/services/quota/internal/store"
	"github.com/linkmesh/linkmesh/services/quota/internal/window"
)

// Name is the service name in logs and traces.
const Name = "quota"

// App is a wired quota service, ready to Run.
type App struct {
	cfg     config.Config
	log     *slog.Logger
	srv     *server.Server
	sweeper store.Sweeper
	closers []func(context.Context) error
}

// New connects to the datastores, ensures indexes and builds the server. logOut receives the
// JSON logs. On error everything opened so far is closed again.
func New(ctx context.Context, cfg config.Config, logOut io.Writer) (_ *App, err error) {
	a := &App{cfg: cfg, log: logging.New(logOut, Name, cfg.LogLevel)}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	a.log.Info("starting", "config", cfg)
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validate config: %w", err)
	}

	tp, shutdownTracing, err := telemetry.Setup(ctx, Name)
	if err != nil {
		return nil, fmt.Errorf("set up tracing: %w", err)
	}
	a.closers = append(a.closers, shutdownTracing)

	mongoClient, db, err := mongodb.Connect(ctx, cfg.Mongo.URI.Reveal(), cfg.Database, tp)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func(ctx context.Context) error { return mongoClient.Disconnect(ctx) })
	if err := store.EnsureIndexes(ctx, db); err != nil {
		return nil, fmt.Errorf("ensure indexes: %w", err)
	}

	rdb, err := redisdb.Connect(ctx, cfg.Redis.URL.Reveal(), tp)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func(context.Context) error { return rdb.Close() })

	keys, err := identity.NewKeys(cfg.InternalSecret.Reveal())
	if err != nil {
		return nil, fmt.Errorf("internal token keys: %w", err)
	}
	st := store.New(db)
	limiter := window.New(window.Options{
		Redis:  rdb,
		Ledger: st,
		Scopes: window.Scopes(window.Sizes{AnonLimit: cfg.AnonQuota, AnonWindow: cfg.AnonWindow}),
		Logger: a.log,
	})
	a.srv = server.New(server.Options{
		Name:           Name,
		Logger:         a.log,
		TracerProvider: tp,
		Ready:          map[string]server.Check{"mongodb": mongodb.Ping(mongoClient), "redis": redisdb.Ping(rdb)},
	})
	quotahttp.Routes(a.srv.App(), keys, limiter)
	a.sweeper = store.Sweeper{Store: st, Interval: store.SweepInterval, Now: time.Now, Logger: a.log}
	return a, nil
}

// Run serves on the configured address until ctx ends; see Serve.
func (a *App) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.ListenAddr)
	if err != nil {
		a.close()
		return fmt.Errorf("listen %s: %w", a.cfg.ListenAddr, err)
	}
	return a.Serve(ctx, ln)
}

// Serve serves on ln and sweeps expired buckets until ctx ends, then drains, stops the
// sweeper and closes the datastores. Component tests call it on their own listener.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	sweepCtx, stopSweeper := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { a.sweeper.Run(sweepCtx) })

	err := a.srv.Serve(ctx, ln, a.cfg.ShutdownDrain)
	stopSweeper()
	wg.Wait()
	a.close()
	a.log.Info("stopped")
	return err
}

// close releases what New opened, newest first.
func (a *App) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errList []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errList = append(errList, a.closers[i](ctx))
	}
	a.closers = nil
	if err := errors.Join(errList...); err != nil {
		a.log.Warn("close", "err", err)
	}
}
