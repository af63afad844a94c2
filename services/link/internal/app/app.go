// Package app wires the link service on what the boot path opened; main and the component
// tests both start it with service.For.
package app

import (
	"context"
	"fmt"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/services/link/internal/cache"
	"github.com/linkmesh/linkmesh/services/link/internal/config"
	linkhttp "github.com/linkmesh/linkmesh/services/link/internal/http"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
	"github.com/linkmesh/linkmesh/services/link/internal/store"
	"github.com/linkmesh/linkmesh/services/link/internal/urlcheck"
	"github.com/linkmesh/linkmesh/services/link/internal/webhooks"
)

// Wire builds the link service on what the boot path opened: the SSRF guard, the link store
// (and its indexes), the Redis cache, the quota client that counts creations, and the
// internal routes.
func Wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	checker, err := urlcheck.New(cfg.BaseURL, cfg.Resolver(), cfg.DNSTimeout)
	if err != nil {
		return service.Parts{}, fmt.Errorf("url checker: %w", err)
	}
	checker.RememberFailures(cfg.DNSNegativeTTL)
	st, err := store.New(ctx, env.Stores.DB)
	if err != nil {
		return service.Parts{}, err
	}
	hookStore, err := store.NewWebhooks(ctx, env.Stores.DB)
	if err != nil {
		return service.Parts{}, err
	}
	hooks, err := webhooks.New(webhooks.Options{Store: hookStore, Outbox: st, Key: cfg.WebhookKey.Reveal(), RetryBase: cfg.WebhookRetryBase,
		Guard:  &webhooks.Guard{URLs: checker, Resolver: cfg.Resolver(), Allowed: cfg.WebhookCIDRs(), LookupTimeout: cfg.DNSTimeout},
		Logger: env.Logger})
	if err != nil {
		return service.Parts{}, err
	}
	// The link-events stream: every event of the links' outboxes, fanned out into webhook
	// deliveries by the consumers of every replica.
	events, err := stream.NewWorker(stream.WorkerOptions{Client: env.Stores.Redis, Stream: webhooks.Stream, Group: webhooks.Group,
		Handler: hooks.HandleEvents, Logger: env.Logger,
		// A fan-out is a few inserts: what a dead replica held is taken over after 10 s.
		ClaimMinIdle: 10 * time.Second, ClaimInterval: 5 * time.Second})
	if err != nil {
		return service.Parts{}, err
	}
	events.Measure(env.Metrics)
	svc := links.NewService(links.Options{
		Events: webhooks.Sink{Redis: env.Stores.Redis, Hooks: hooks},
		Store:  st, Cache: cache.New(env.Stores.Redis, env.Logger), URLs: checker, BaseURL: cfg.BaseURL,
		// Longer than the quota service takes to settle a reservation (5 s at most), so an
		// answer is never abandoned with its unit taken.
		Quota: quota.New(env.Peer(pkgconfig.Quota, cfg.QuotaURL, 6*time.Second)), Logger: env.Logger,
		Clicks:     analytics.New(env.Peer(pkgconfig.Analytics, cfg.AnalyticsURL, 0)),
		Moderation: moderation.New(env.Peer(pkgconfig.Moderation, cfg.ModerationURL, 0)),
		Keys:       env.Keys,
	})
	linkhttp.Register(env.Server.App(), env.Keys, svc, hooks)
	// An auto-renewing link never answers 410 (the rule reads auto_renew); its expires_at is
	// also kept ahead of now, so what owners and the info route show stays true.
	renew := mongodb.Sweeper{What: "auto-renewing links", Interval: 10 * time.Minute, Now: time.Now, Logger: env.Logger,
		Delete: func(ctx context.Context, now time.Time) (int64, error) {
			return st.ExtendAutoRenewing(ctx, now, 24*time.Hour, links.DefaultExpirationDays*24*time.Hour)
		}}
	// A permanent deletion whose request failed or died half way is finished here.
	purges := mongodb.Sweeper{What: "links being deleted", Interval: 30 * time.Second, Now: time.Now, Logger: env.Logger,
		Delete: svc.FinishPurges}
	// Each owned link's expiry becomes a link.expired event within seconds (the contract
	// promises a minute); the sweep reads a sparse index of the expiries owed.
	expiries := mongodb.Sweeper{What: "expired links' events", Interval: 5 * time.Second, Now: time.Now, Logger: env.Logger,
		Delete: svc.WriteExpiries}
	return service.Parts{Workers: []func(context.Context){renew.Run, purges.Run, expiries.Run, svc.RunRelay, events.Run,
		hooks.RunDeliveries, hooks.RunClearer}}, nil
}
