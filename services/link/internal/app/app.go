// Package app wires the link service together; main and the component tests both use it.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/link/internal/cache"
	"github.com/linkmesh/linkmesh/services/link/internal/config"
	linkhttp "github.com/linkmesh/linkmesh/services/link/internal/http"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
	"github.com/linkmesh/linkmesh/services/link/internal/store"
	"github.com/linkmesh/linkmesh/services/link/internal/urlcheck"
)

// App is a running link service's parts.
type App struct {
	Server *server.Server
	drain  time.Duration
	close  func()
}

// Deps are what New needs besides the config.
type Deps struct {
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
	// Resolver overrides DNS for the SSRF guard (tests); nil uses the system resolver.
	Resolver urlcheck.Resolver
}

// New connects to the datastores and builds the server.
func New(ctx context.Context, cfg config.Config, deps Deps) (*App, error) {
	keys, err := identity.NewKeys(cfg.InternalSecret.Reveal())
	if err != nil {
		return nil, err
	}
	resolver := deps.Resolver
	if resolver == nil {
		resolver = cfg.Resolver()
	}
	checker, err := urlcheck.New(cfg.BaseURL, resolver, cfg.DNSTimeout)
	if err != nil {
		return nil, fmt.Errorf("url checker: %w", err)
	}
	ds, err := service.OpenDatastores(ctx, cfg.Mongo, cfg.Redis, deps.TracerProvider)
	if err != nil {
		return nil, err
	}
	st, err := store.New(ctx, ds.DB)
	if err != nil {
		ds.Close()
		return nil, err
	}
	svc := links.NewService(st, cache.New(ds.Redis, deps.Logger), checker, cfg.BaseURL)
	srv := server.New(server.Options{
		Name: "link", Logger: deps.Logger, TracerProvider: deps.TracerProvider, Ready: ds.Checks(),
	})
	linkhttp.Register(srv.App(), keys, svc)
	return &App{Server: srv, drain: cfg.ShutdownDrain, close: ds.Close}, nil
}

// Serve runs the server on ln until ctx ends, then releases the datastores.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	return service.Serve(ctx, a.Server, ln, a.drain, a.close)
}

// Close releases the datastores of an app that will not serve.
func (a *App) Close() { a.close() }
