// Package config is the quota service's typed configuration, read once from LINKMESH_*
// variables at start-up.
package config

import (
	"errors"
	"log/slog"
	"time"

	"github.com/linkmesh/linkmesh/pkg/config"
)

// Config is everything the quota service reads from its environment.
type Config struct {
	config.Service
	config.Datastores

	// AnonQuota is how many anonymous link creations one identity key gets per AnonWindow.
	AnonQuota int `env:"LINKMESH_ANON_QUOTA" envDefault:"10"`
	// AnonWindow is the sliding window of AnonQuota.
	AnonWindow time.Duration `env:"LINKMESH_ANON_WINDOW" envDefault:"24h"`

	// UserWindow is the sliding window of a registered user's quota_limit creations.
	UserWindow time.Duration `env:"LINKMESH_USER_WINDOW" envDefault:"720h"`

	// LoginMaxFailures is how many failed password logins one pair of e-mail and client
	// identity key, and how many failed ID-token logins one client identity key, may have
	// per LoginWindow before logins answer 429.
	LoginMaxFailures int `env:"LINKMESH_LOGIN_MAX_FAILURES" envDefault:"10"`
	// LoginMaxFailuresPerEmail is the ceiling of failed password logins of one e-mail over
	// all clients per LoginWindow: it stops an attack spread over many clients, and is much
	// higher than LoginMaxFailures so that one stranger cannot lock the owner out.
	LoginMaxFailuresPerEmail int `env:"LINKMESH_LOGIN_MAX_FAILURES_PER_EMAIL" envDefault:"100"`
	// LoginMaxFailuresPerClient is how many failed password logins one client identity key
	// may have over all e-mails per LoginWindow: it stops one client spraying passwords
	// over many e-mails.
	LoginMaxFailuresPerClient int `env:"LINKMESH_LOGIN_MAX_FAILURES_PER_CLIENT" envDefault:"30"`
	// LoginWindow is the sliding window of all three.
	LoginWindow time.Duration `env:"LINKMESH_LOGIN_WINDOW" envDefault:"15m"`

	// RegisterLimit is how many accounts one client identity key may register per
	// RegisterWindow (then 429).
	RegisterLimit  int           `env:"LINKMESH_REGISTER_LIMIT" envDefault:"5"`
	RegisterWindow time.Duration `env:"LINKMESH_REGISTER_WINDOW" envDefault:"1h"`

	// TokenRate is how many requests one API token may make per minute (then 429).
	TokenRate int `env:"LINKMESH_TOKEN_RATE" envDefault:"600"`
}

// Validate checks the quota service's own settings; the boot path checks the shared ones.
func (c *Config) Validate() error {
	if c.AnonQuota < 1 {
		return errors.New("LINKMESH_ANON_QUOTA must be at least 1")
	}
	// Durable buckets are per minute, so a shorter window could not survive a Redis restart.
	if c.AnonWindow < time.Minute {
		return errors.New("LINKMESH_ANON_WINDOW must be at least 1m")
	}
	if c.UserWindow < time.Minute {
		return errors.New("LINKMESH_USER_WINDOW must be at least 1m")
	}
	if c.LoginMaxFailures < 1 {
		return errors.New("LINKMESH_LOGIN_MAX_FAILURES must be at least 1")
	}
	// A ceiling below the per-client limit would let one client lock the e-mail out again.
	if c.LoginMaxFailuresPerEmail < c.LoginMaxFailures {
		return errors.New("LINKMESH_LOGIN_MAX_FAILURES_PER_EMAIL must be at least LINKMESH_LOGIN_MAX_FAILURES")
	}
	// Below the per-pair limit, one client would be stopped before its own e-mail's limit.
	if c.LoginMaxFailuresPerClient < c.LoginMaxFailures {
		return errors.New("LINKMESH_LOGIN_MAX_FAILURES_PER_CLIENT must be at least LINKMESH_LOGIN_MAX_FAILURES")
	}
	if c.RegisterLimit < 1 {
		return errors.New("LINKMESH_REGISTER_LIMIT must be at least 1")
	}
	if c.RegisterWindow < time.Minute {
		return errors.New("LINKMESH_REGISTER_WINDOW must be at least 1m")
	}
	if c.LoginWindow < time.Minute {
		return errors.New("LINKMESH_LOGIN_WINDOW must be at least 1m")
	}
	if c.TokenRate < 1 || c.TokenRate > 1_000_000 {
		return errors.New("LINKMESH_TOKEN_RATE must be between 1 and 1000000")
	}
	return nil
}

// LogValue lists the quota service's own settings for the start-up line.
func (c *Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("anon_quota", c.AnonQuota),
		slog.String("anon_window", c.AnonWindow.String()),
		slog.String("user_window", c.UserWindow.String()),
		slog.Int("login_max_failures", c.LoginMaxFailures),
		slog.Int("login_max_failures_per_email", c.LoginMaxFailuresPerEmail),
		slog.Int("login_max_failures_per_client", c.LoginMaxFailuresPerClient),
		slog.Int("register_limit", c.RegisterLimit),
		slog.String("register_window", c.RegisterWindow.String()),
		slog.String("login_window", c.LoginWindow.String()),
		slog.Int("token_rate", c.TokenRate),
	)
}
