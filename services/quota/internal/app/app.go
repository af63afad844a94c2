// Package app wires the quota service on what the boot path opened: the window rules, the
// routes and the bucket sweeper.
package app

import (
	"context"
	"fmt"
	"time"

	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/quota/internal/config"
	quotahttp "github.com/linkmesh/linkmesh/services/quota/internal/http"
	"github.com/linkmesh/linkmesh/services/quota/internal/store"
	"github.com/linkmesh/linkmesh/services/quota/internal/window"
)

// Spec is the quota service for the boot path; cfg is filled before Wire runs.
func Spec(cfg *config.Config) service.Spec {
	return service.Spec{Name: pkgconfig.Quota, Config: cfg, Wire: func(ctx context.Context, env *service.Env) (service.Parts, error) {
		return wire(ctx, cfg, env)
	}}
}

// wire ensures indexes, mounts the routes and returns the bucket sweeper.
func wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	if err := store.EnsureIndexes(ctx, env.Stores.DB); err != nil {
		return service.Parts{}, fmt.Errorf("ensure indexes: %w", err)
	}
	st := store.New(env.Stores.DB)
	limiter := window.New(window.Options{
		Redis:  env.Stores.Redis,
		Ledger: st,
		Scopes: window.Scopes(window.Sizes{AnonLimit: cfg.AnonQuota, AnonWindow: cfg.AnonWindow,
			LoginFailures: cfg.LoginMaxFailures, LoginWindow: cfg.LoginWindow}),
		Logger: env.Logger,
	})
	quotahttp.Routes(env.Server.App(), env.Keys, limiter)
	sweeper := mongodb.Sweeper{What: "quota buckets", Interval: store.SweepInterval, Delete: st.DeleteExpired,
		Now: time.Now, Logger: env.Logger}
	return service.Parts{Workers: []func(context.Context){sweeper.Run}}, nil
}
