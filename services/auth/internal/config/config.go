// Package config is the auth service's typed configuration, read once from LINKMESH_*
// variables at start-up.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"time"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/mail"
)

// MinLoginRecordRetention keeps at least a day of login records: less would erase the trail
// of an attack before anyone could look at it.
const MinLoginRecordRetention = 24 * time.Hour

// DefaultLoginRecordRetention is LoginRecordRetention when LINKMESH_LOGIN_RECORD_RETENTION is
// unset (its envDefault).
const DefaultLoginRecordRetention = 90 * 24 * time.Hour

// Config is everything the auth service reads from its environment.
type Config struct {
	config.Service
	// Its own database only: auth keeps nothing in Redis (sessions, tokens and login windows
	// are in MongoDB and the quota service), so it needs no Redis user.
	config.Mongo
	config.Peers
	// Public: the base the links in mail open.
	config.Public

	// SessionTTL is how long a session (and its go_session cookie) lives.
	SessionTTL time.Duration `env:"LINKMESH_SESSION_TTL" envDefault:"168h"`
	// LoginRecordRetention is how long login records are kept: an audit trail, but one of
	// personal data (hashed addresses, user agents). Each record stores its expiry when it is
	// written, so a change applies to the records written after it.
	LoginRecordRetention time.Duration `env:"LINKMESH_LOGIN_RECORD_RETENTION" envDefault:"2160h"`

	// OIDCIssuer and OIDCClientID configure login with an identity provider's ID token;
	// both unset turns it off.
	OIDCIssuer   string `env:"LINKMESH_OIDC_ISSUER"`
	OIDCClientID string `env:"LINKMESH_OIDC_CLIENT_ID"`
	// OIDCJWKSURL, when set, is where the issuer's keys are fetched; discovery is skipped.
	OIDCJWKSURL string `env:"LINKMESH_OIDC_JWKS_URL"`
	// OIDCAuthorizationURL is where the web application sends a browser to sign in for an ID
	// token; unset, Google's for Google's issuer (no other is guessed).
	OIDCAuthorizationURL string `env:"LINKMESH_OIDC_AUTHORIZATION_URL"`

	// BootstrapAdminEmail and BootstrapAdminPassword name the first super admin, ensured at
	// every start; both or neither.
	BootstrapAdminEmail    string        `env:"LINKMESH_BOOTSTRAP_ADMIN_EMAIL"`
	BootstrapAdminPassword config.Secret `env:"LINKMESH_BOOTSTRAP_ADMIN_PASSWORD"`

	// SMTPURL is the mail server the outbox sends through (smtp:// or smtps://, credentials
	// in the URL); unset, mail is kept in the outbox and sent once one is configured.
	SMTPURL config.Secret `env:"LINKMESH_SMTP_URL"`
	// EmailVerification is "required" (new password accounts verify their address by a
	// mailed link before they create links) or "off" (new accounts count as verified).
	EmailVerification string `env:"LINKMESH_EMAIL_VERIFICATION" envDefault:"required"`
	// MailFrom is the sender of every mail.
	MailFrom string `env:"LINKMESH_MAIL_FROM" envDefault:"linkmesh <no-reply@localhost>"`
}

// Validate checks the auth service's own settings; the boot path checks the shared ones.
func (c *Config) Validate() error {
	if c.SessionTTL < time.Minute || c.SessionTTL > 366*24*time.Hour {
		return errors.New("LINKMESH_SESSION_TTL must be between 1m and 8784h")
	}
	if c.LoginRecordRetention < MinLoginRecordRetention {
		return errors.New("LINKMESH_LOGIN_RECORD_RETENTION must be at least 24h")
	}
	if c.OIDCJWKSURL != "" && c.OIDCIssuer == "" {
		return errors.New("LINKMESH_OIDC_JWKS_URL needs LINKMESH_OIDC_ISSUER and LINKMESH_OIDC_CLIENT_ID")
	}
	if c.OIDCAuthorizationURL != "" {
		if c.OIDCIssuer == "" {
			return errors.New("LINKMESH_OIDC_AUTHORIZATION_URL needs LINKMESH_OIDC_ISSUER and LINKMESH_OIDC_CLIENT_ID")
		}
		// Browsers carry the ID token back from it: https, but on this machine's loopback.
		if u, err := url.Parse(c.OIDCAuthorizationURL); err != nil || u.Host == "" ||
			(u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname()))) {
			return fmt.Errorf("LINKMESH_OIDC_AUTHORIZATION_URL must be an https URL (http only on loopback), got %q", c.OIDCAuthorizationURL)
		}
	}
	for _, check := range []error{
		config.Together("LINKMESH_OIDC_ISSUER", c.OIDCIssuer, "LINKMESH_OIDC_CLIENT_ID", c.OIDCClientID),
		config.OptionalURL("LINKMESH_OIDC_ISSUER", c.OIDCIssuer),
		config.OptionalURL("LINKMESH_OIDC_JWKS_URL", c.OIDCJWKSURL),
		config.Together("LINKMESH_BOOTSTRAP_ADMIN_EMAIL", c.BootstrapAdminEmail,
			"LINKMESH_BOOTSTRAP_ADMIN_PASSWORD", c.BootstrapAdminPassword.Reveal()),
	} {
		if check != nil {
			return check
		}
	}
	if c.EmailVerification != "required" && c.EmailVerification != "off" {
		return errors.New("LINKMESH_EMAIL_VERIFICATION must be required or off")
	}
	if err := c.validateBootstrap(); err != nil {
		return err
	}
	if c.SMTPURL.Reveal() != "" {
		if _, err := mail.NewSMTP(c.SMTPURL.Reveal(), c.MailFrom); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validateBootstrap() error {
	if c.BootstrapAdminEmail == "" {
		return nil
	}
	if _, err := accounts.ValidateEmail(c.BootstrapAdminEmail); err != nil {
		return fmt.Errorf("LINKMESH_BOOTSTRAP_ADMIN_EMAIL: %w", err)
	}
	if err := accounts.ValidatePassword(c.BootstrapAdminPassword.Reveal()); err != nil {
		return fmt.Errorf("LINKMESH_BOOTSTRAP_ADMIN_PASSWORD: %w", err)
	}
	return nil
}

// LogValue lists the auth service's own settings for the start-up line; secrets mask
// themselves.
func (c *Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("session_ttl", c.SessionTTL.String()),
		slog.String("login_record_retention", c.LoginRecordRetention.String()),
		slog.String("oidc_issuer", c.OIDCIssuer),
		slog.String("oidc_client_id", c.OIDCClientID),
		slog.String("oidc_jwks_url", c.OIDCJWKSURL),
		slog.String("oidc_authorization_url", c.OIDCAuthorizationURL),
		slog.Bool("bootstrap_admin", c.BootstrapAdminEmail != ""),
		slog.Any("bootstrap_admin_password", c.BootstrapAdminPassword),
		slog.Any("smtp_url", c.SMTPURL),
		slog.String("mail_from", c.MailFrom),
		slog.String("email_verification", c.EmailVerification),
	)
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
