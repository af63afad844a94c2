// Package app wires the gateway together; main and the component tests both use it.
package app

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/httpclient"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/redisdb"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/gateway/internal/captcha"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clientip"
	"github.com/linkmesh/linkmesh/services/gateway/internal/config"
	gwhttp "github.com/linkmesh/linkmesh/services/gateway/internal/http"
	"github.com/linkmesh/linkmesh/services/gateway/internal/redirect"
	"github.com/linkmesh/linkmesh/services/gateway/internal/session"
)

// App is a built gateway.
type App struct {
	Server *server.Server
	drain  time.Duration
	close  func()
}

// New connects to Redis, subscribes to link invalidations and builds the server.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, tp trace.TracerProvider) (*App, error) {
	keys, err := identity.NewKeys(cfg.InternalSecret.Reveal())
	if err != nil {
		return nil, err
	}
	rdb, err := redisdb.Connect(ctx, cfg.URL.Reveal(), tp)
	if err != nil {
		return nil, err
	}
	peer := func(name, url string) *httpclient.Client {
		return httpclient.New(httpclient.Options{Service: name, BaseURL: url, TracerProvider: tp})
	}
	linkHTTP, authHTTP := peer("link", cfg.LinkURL), peer("auth", cfg.AuthURL)
	links := link.New(linkHTTP)
	cache := redirect.NewCache(cfg.RedirectCacheSize, redirect.LinkResolver{Links: links, Keys: keys})
	subCtx, cancelSub := context.WithCancel(context.WithoutCancel(ctx))
	if err := cache.Subscribe(subCtx, rdb, log); err != nil {
		cancelSub()
		_ = rdb.Close()
		return nil, err
	}
	srv := server.New(server.Options{Name: "gateway", Logger: log, TracerProvider: tp,
		Ready: map[string]server.Check{"redis": redisdb.Ping(rdb)}})
	authClient := auth.New(authHTTP)
	gate := session.NewGate(authClient, keys, clientip.NewResolver(cfg.Proxies),
		clientip.NewKeyer(cfg.IdentitySecret.Reveal()), cfg.CookieSecure)
	gwhttp.Register(srv.App(), gwhttp.Deps{
		Links:    links,
		Quota:    quota.New(peer("quota", cfg.QuotaURL)),
		Auth:     authClient,
		Gate:     gate,
		BaseURL:  cfg.BaseURL,
		Captcha:  captcha.New(cfg.CaptchaVerifyURL, cfg.CaptchaSecret.Reveal(), otelhttp.NewTransport(http.DefaultTransport, otelhttp.WithTracerProvider(tp))),
		Redirect: redirect.NewHandler(cache),
		Health:   map[string]gwhttp.Probe{"auth": authHTTP.Ready, "link": linkHTTP.Ready},
		Logger:   log,
	})
	return &App{Server: srv, drain: cfg.ShutdownDrain, close: func() { cancelSub(); _ = rdb.Close() }}, nil
}

// Serve runs the server on ln until ctx ends, then releases Redis.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	return service.Serve(ctx, a.Server, ln, a.drain, a.close)
}

// Close releases Redis for an app that will not serve.
func (a *App) Close() { a.close() }
