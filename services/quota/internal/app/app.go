// Package app wires the quota service together: datastores, the window rules, the HTTP
// server and the bucket sweeper.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/pkg/service"
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
	sweeper mongodb.Sweeper
	close   func()
}

// New connects to the datastores, ensures indexes and builds the server. On error everything
// opened so far is closed again.
func New(ctx context.Context, cfg config.Config, rt service.Runtime) (_ *App, err error) {
	a := &App{cfg: cfg, log: rt.Logger}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("validate config: %w", err)
	}
	keys, err := identity.NewKeys(cfg.InternalSecret.Reveal())
	if err != nil {
		return nil, fmt.Errorf("internal token keys: %w", err)
	}
	ds, err := service.OpenDatastores(ctx, cfg.Mongo, cfg.Redis, rt.TracerProvider)
	if err != nil {
		return nil, err
	}
	a.close = ds.Close
	if err := store.EnsureIndexes(ctx, ds.DB); err != nil {
		ds.Close()
		return nil, fmt.Errorf("ensure indexes: %w", err)
	}
	st := store.New(ds.DB)
	limiter := window.New(window.Options{
		Redis:  ds.Redis,
		Ledger: st,
		Scopes: window.Scopes(window.Sizes{AnonLimit: cfg.AnonQuota, AnonWindow: cfg.AnonWindow,
			LoginFailures: cfg.LoginMaxFailures, LoginWindow: cfg.LoginWindow}),
		Logger: a.log,
	})
	a.srv = server.New(server.Options{Name: Name, Logger: a.log, TracerProvider: rt.TracerProvider, Ready: ds.Checks()})
	quotahttp.Routes(a.srv.App(), keys, limiter)
	a.sweeper = mongodb.Sweeper{What: "quota buckets", Interval: store.SweepInterval, Delete: st.DeleteExpired,
		Now: time.Now, Logger: a.log}
	return a, nil
}

// Serve serves on ln and sweeps expired buckets until ctx ends, then drains, stops the
// sweeper and closes the datastores. Component tests call it on their own listener.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	return service.Serve(ctx, a.srv, ln, a.cfg.ShutdownDrain, a.close, a.sweeper.Run)
}

// Close releases the datastores of an app that will not serve.
func (a *App) Close() { a.close() }
