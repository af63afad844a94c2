// Package app wires the auth service together: datastores, the quota, moderation (audit log)
// and link clients, the identity provider, the account rules, the bootstrap super admin and
// the HTTP server, on what the boot path opened. main and the component tests both start it
// with service.For.
package app

import (
	"context"
	"fmt"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/config"
	authhttp "github.com/linkmesh/linkmesh/services/auth/internal/http"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
	"github.com/linkmesh/linkmesh/services/auth/internal/mail"
	"github.com/linkmesh/linkmesh/services/auth/internal/password"
	"github.com/linkmesh/linkmesh/services/auth/internal/store"
)

// Wire builds the auth service on what the boot path opened: the account store (its schema
// and indexes), the password hasher, the quota client of the login windows, the moderation
// service's audit log and the link service that the admin actions write through, the
// identity provider, the bootstrap super admin and the internal routes. Expired sessions and
// login records past their retention are deleted by the database (TTL indexes, see store).
func Wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	st, err := store.New(ctx, env.Stores.DB, cfg.LoginRecordRetention)
	if err != nil {
		return service.Parts{}, fmt.Errorf("open account store: %w", err)
	}
	hasher, err := password.NewHasher(password.OWASP(), 0)
	if err != nil {
		return service.Parts{}, err
	}
	outbox, err := openOutbox(ctx, cfg, env)
	if err != nil {
		return service.Parts{}, err
	}
	svc, err := accounts.New(ctx, accounts.Options{
		Mail: outbox, BaseURL: cfg.BaseURL, RequireVerification: cfg.EmailVerification == "required",
		Store: st, Tokens: st, Quota: quota.New(env.Peer(pkgconfig.Quota, cfg.QuotaURL, 3*time.Second)), Hasher: hasher,
		Audit:      moderation.New(env.Peer(pkgconfig.Moderation, cfg.ModerationURL, 0)),
		Links:      link.New(env.Peer(pkgconfig.Link, cfg.LinkURL, 0)),
		SessionTTL: cfg.SessionTTL, Logger: env.Logger,
		IDP:    idp.New(idp.Config{Issuer: cfg.OIDCIssuer, ClientID: cfg.OIDCClientID, JWKSURL: cfg.OIDCJWKSURL}),
		Issuer: cfg.OIDCIssuer, ClientID: cfg.OIDCClientID, AuthorizationURL: cfg.OIDCAuthorizationURL,
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
	return service.Parts{Workers: []func(context.Context){func(ctx context.Context) { outbox.Run(ctx, mailInterval) }}}, nil
}

// mailInterval is how often a replica looks for mail due later or left by another.
const mailInterval = 5 * time.Second

// openOutbox opens the mail outbox with the configured server; without one, mail waits in
// the outbox (and the start-up says so).
func openOutbox(ctx context.Context, cfg *config.Config, env *service.Env) (*mail.Outbox, error) {
	var sender mail.Sender
	if u := cfg.SMTPURL.Reveal(); u != "" {
		s, err := mail.NewSMTP(u, cfg.MailFrom)
		if err != nil {
			return nil, err
		}
		sender = s
	} else {
		env.Logger.WarnContext(ctx, "LINKMESH_SMTP_URL is not set: mail is kept in the outbox, not sent")
	}
	return mail.NewOutbox(ctx, env.Stores.DB, sender, env.Logger)
}
