// Package app wires the auth service together: datastores, the quota client, the identity
// provider, the account rules, the bootstrap super admin, the HTTP server and the sweepers of
// expired sessions and old login records. main and the component tests both use it.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/httpclient"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/config"
	authhttp "github.com/linkmesh/linkmesh/services/auth/internal/http"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
	"github.com/linkmesh/linkmesh/services/auth/internal/password"
	"github.com/linkmesh/linkmesh/services/auth/internal/store"
)

// Name is the service name in logs and traces.
const Name = "auth"

// App is a wired auth service, ready to Run.
type App struct {
	cfg      config.Config
	srv      *server.Server
	sweepers []mongodb.Sweeper
	close    func()
}

// New connects to the datastores, ensures indexes, ensures the bootstrap super admin and
// builds the server. On error everything opened so far is closed again.
func New(ctx context.Context, cfg config.Config, rt service.Runtime) (*App, error) {
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
	a, err := build(ctx, cfg, rt, keys, ds)
	if err != nil {
		ds.Close()
		return nil, err
	}
	return a, nil
}

func build(ctx context.Context, cfg config.Config, rt service.Runtime, keys *identity.Keys, ds *service.Datastores) (*App, error) {
	st, err := store.New(ctx, ds.DB)
	if err != nil {
		return nil, fmt.Errorf("open account store: %w", err)
	}
	hasher, err := password.NewHasher(password.OWASP(), 0)
	if err != nil {
		return nil, err
	}
	quotaClient := quota.New(httpclient.New(httpclient.Options{
		Service: "quota", BaseURL: cfg.QuotaURL, TracerProvider: rt.TracerProvider, Timeout: 3 * time.Second,
	}))
	svc, err := accounts.New(ctx, accounts.Options{
		Store: st, Quota: quotaClient, Hasher: hasher, SessionTTL: cfg.SessionTTL, Logger: rt.Logger,
		IDP:    idp.New(idp.Config{Issuer: cfg.OIDCIssuer, ClientID: cfg.OIDCClientID, JWKSURL: cfg.OIDCJWKSURL}),
		Issuer: cfg.OIDCIssuer, ClientID: cfg.OIDCClientID,
	})
	if err != nil {
		return nil, err
	}
	if cfg.BootstrapAdminEmail != "" {
		if err := svc.Bootstrap(ctx, cfg.BootstrapAdminEmail, cfg.BootstrapAdminPassword.Reveal()); err != nil {
			return nil, fmt.Errorf("bootstrap super admin: %w", err)
		}
	}
	srv := server.New(server.Options{Name: Name, Logger: rt.Logger, TracerProvider: rt.TracerProvider, Ready: ds.Checks()})
	authhttp.Register(srv.App(), keys, svc)
	return &App{cfg: cfg, srv: srv, close: ds.Close, sweepers: sweepers(cfg, st, rt.Logger)}, nil
}

// sweepers delete what no read needs any more: expired sessions, and login records older
// than the retention.
func sweepers(cfg config.Config, st *store.Store, log *slog.Logger) []mongodb.Sweeper {
	retention := cfg.LoginRecordRetention
	return []mongodb.Sweeper{
		{What: "sessions", Interval: store.SweepInterval, Delete: st.DeleteExpiredSessions, Now: time.Now, Logger: log},
		{What: "login records", Interval: store.SweepInterval, Now: time.Now, Logger: log,
			Delete: func(ctx context.Context, now time.Time) (int64, error) {
				return st.DeleteLoginRecordsBefore(ctx, now.Add(-retention))
			}},
	}
}

// Serve serves on ln and runs the sweepers until ctx ends, then drains, stops the sweepers
// and closes the datastores. Component tests call it on their own listener.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	workers := make([]func(context.Context), 0, len(a.sweepers))
	for _, sw := range a.sweepers {
		workers = append(workers, sw.Run)
	}
	return service.Serve(ctx, a.srv, ln, a.cfg.ShutdownDrain, a.close, workers...)
}

// Close releases the datastores of an app that will not serve.
func (a *App) Close() { a.close() }
