// Package app wires the quota service on what the boot path opened: the window rules and the
// routes.
package app

import (
	"context"
	"fmt"

	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/quota/internal/config"
	quotahttp "github.com/linkmesh/linkmesh/services/quota/internal/http"
	"github.com/linkmesh/linkmesh/services/quota/internal/store"
	"github.com/linkmesh/linkmesh/services/quota/internal/window"
)

// Wire builds the quota service on what the boot path opened: the windows over Redis and
// their durable buckets, and the internal routes. Expired buckets are deleted by
// quota_usage's TTL index, so the service runs no worker.
func Wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	if err := store.Prepare(ctx, env.Stores.DB); err != nil {
		return service.Parts{}, fmt.Errorf("prepare store: %w", err)
	}
	limiter := window.New(window.Options{
		Redis:  env.Stores.Redis,
		Ledger: store.New(env.Stores.DB),
		Scopes: window.Scopes(window.Sizes{AnonLimit: cfg.AnonQuota, AnonWindow: cfg.AnonWindow,
			LoginFailures: cfg.LoginMaxFailures, LoginFailuresPerEmail: cfg.LoginMaxFailuresPerEmail,
			LoginFailuresPerClient: cfg.LoginMaxFailuresPerClient, LoginWindow: cfg.LoginWindow,
			Registrations: cfg.RegisterLimit, RegisterWindow: cfg.RegisterWindow,
			UserWindow: cfg.UserWindow, TokenRate: cfg.TokenRate}),
		Logger: env.Logger,
	})
	decisions := env.Metrics.CounterVec("quota_decisions_total", "Quota reservations by scope and decision (allowed, denied).", "scope", "decision")
	quotahttp.Routes(env.Server.App(), env.Keys, limiter, decisions)
	return service.Parts{}, nil
}
