// Package app wires the quota service on what the boot path opened: the window rules, the
// routes and the bucket sweeper.
package app

import (
	"context"
	"fmt"
	"time"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/quota/internal/config"
	quotahttp "github.com/linkmesh/linkmesh/services/quota/internal/http"
	"github.com/linkmesh/linkmesh/services/quota/internal/store"
	"github.com/linkmesh/linkmesh/services/quota/internal/window"
)

// Wire builds the quota service on what the boot path opened: the windows over Redis and
// their durable buckets, and the internal routes; its worker sweeps expired buckets.
func Wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	if err := store.EnsureIndexes(ctx, env.Stores.DB); err != nil {
		return service.Parts{}, fmt.Errorf("ensure indexes: %w", err)
	}
	st := store.New(env.Stores.DB)
	limiter := window.New(window.Options{
		Redis:  env.Stores.Redis,
		Ledger: st,
		Scopes: window.Scopes(window.Sizes{AnonLimit: cfg.AnonQuota, AnonWindow: cfg.AnonWindow,
			LoginFailures: cfg.LoginMaxFailures, LoginFailuresPerEmail: cfg.LoginMaxFailuresPerEmail,
			LoginWindow: cfg.LoginWindow, UserWindow: cfg.UserWindow}),
		Logger: env.Logger,
	})
	decisions := env.Metrics.CounterVec("quota_decisions_total", "Quota reservations by scope and decision (allowed, denied).", "scope", "decision")
	quotahttp.Routes(env.Server.App(), env.Keys, limiter, decisions)
	sweeper := mongodb.Sweeper{What: "quota buckets", Interval: store.SweepInterval, Delete: st.DeleteExpired,
		Now: time.Now, Logger: env.Logger}
	return service.Parts{Workers: []func(context.Context){sweeper.Run}}, nil
}
