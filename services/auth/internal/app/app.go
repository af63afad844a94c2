// Package app wires the auth service together: datastores, the quota, moderation (audit log)
// and link clients, the identity provider, the account rules, the bootstrap super admin, the
// HTTP server and the sweepers of expired sessions and old login records, on what the boot
// path opened. main and the component tests both start it with service.For.
package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/config"
	authhttp "github.com/linkmesh/linkmesh/services/auth/internal/http"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
	"github.com/linkmesh/linkmesh/services/auth/internal/password"
	"github.com/linkmesh/linkmesh/services/auth/internal/store"
)

// Wire builds the auth service on what the boot path opened: the account store (and its
// indexes), the password hasher, the quota client of the login windows, the moderation
// service's audit log and the link service that the admin actions write through, the
// identity provider, the bootstrap super admin and the internal routes. Its workers sweep
// expired sessions and login records past their retention.
func Wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	st, err := store.New(ctx, env.Stores.DB)
	if err != nil {
		return service.Parts{}, fmt.Errorf("open account store: %w", err)
	}
	hasher, err := password.NewHasher(password.OWASP(), 0)
	if err != nil {
		return service.Parts{}, err
	}
	svc, err := accounts.New(ctx, accounts.Options{
		Store: st, Quota: quota.New(env.Peer(pkgconfig.Quota, cfg.QuotaURL, 3*time.Second)), Hasher: hasher,
		Audit:      moderation.New(env.Peer(pkgconfig.Moderation, cfg.ModerationURL, 0)),
		Links:      link.New(env.Peer(pkgconfig.Link, cfg.LinkURL, 0)),
		SessionTTL: cfg.SessionTTL, Logger: env.Logger,
		IDP:    idp.New(idp.Config{Issuer: cfg.OIDCIssuer, ClientID: cfg.OIDCClientID, JWKSURL: cfg.OIDCJWKSURL}),
		Issuer: cfg.OIDCIssuer, ClientID: cfg.OIDCClientID,
		Attempts: env.Metrics.CounterVec("login_attempts_total", "Login attempts by method (password, oidc) and result (success, failure, limited).", "method", "result"),
	})
	if err != nil {
		return service.Parts{}, err
	}
	if cfg.BootstrapAdminEmail != "" {
		if err := svc.Bootstrap(ctx, cfg.BootstrapAdminEmail, cfg.BootstrapAdminPassword.Reveal()); err != nil {
			return service.Parts{}, fmt.Errorf("bootstrap super admin: %w", err)
		}
	}
	authhttp.Register(env.Server.App(), env.Keys, svc)
	var workers []func(context.Context)
	for _, sw := range sweepers(cfg, st, env.Logger) {
		workers = append(workers, sw.Run)
	}
	return service.Parts{Workers: workers}, nil
}

// sweepers delete what no read needs any more: expired sessions, and login records older
// than the retention.
func sweepers(cfg *config.Config, st *store.Store, log *slog.Logger) []mongodb.Sweeper {
	retention := cfg.LoginRecordRetention
	return []mongodb.Sweeper{
		{What: "sessions", Interval: store.SweepInterval, Delete: st.DeleteExpiredSessions, Now: time.Now, Logger: log},
		{What: "login records", Interval: store.SweepInterval, Now: time.Now, Logger: log,
			Delete: func(ctx context.Context, now time.Time) (int64, error) {
				return st.DeleteLoginRecordsBefore(ctx, now.Add(-retention))
			}},
	}
}
