// Package app wires the link service on what the boot path opened; main and the component
// tests both start it through Spec.
package app

import (
	"context"
	"fmt"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/link/internal/cache"
	"github.com/linkmesh/linkmesh/services/link/internal/config"
	linkhttp "github.com/linkmesh/linkmesh/services/link/internal/http"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
	"github.com/linkmesh/linkmesh/services/link/internal/store"
	"github.com/linkmesh/linkmesh/services/link/internal/urlcheck"
)

// Spec is the link service for the boot path; cfg is filled before Wire runs.
func Spec(cfg *config.Config) service.Spec {
	return service.Spec{Name: pkgconfig.Link, Config: cfg, Wire: func(ctx context.Context, env *service.Env) (service.Parts, error) {
		return wire(ctx, cfg, env)
	}}
}

// wire builds the URL guard, ensures indexes and mounts the routes.
func wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	checker, err := urlcheck.New(cfg.BaseURL, cfg.Resolver(), cfg.DNSTimeout)
	if err != nil {
		return service.Parts{}, fmt.Errorf("url checker: %w", err)
	}
	st, err := store.New(ctx, env.Stores.DB)
	if err != nil {
		return service.Parts{}, err
	}
	svc := links.NewService(links.Options{
		Store: st, Cache: cache.New(env.Stores.Redis, env.Logger), URLs: checker, BaseURL: cfg.BaseURL,
		Quota: quota.New(env.Peer(pkgconfig.Quota, cfg.QuotaURL, 0)), Logger: env.Logger,
	})
	linkhttp.Register(env.Server.App(), env.Keys, svc)
	return service.Parts{}, nil
}
