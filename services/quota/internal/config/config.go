// Package config is the quota service's typed configuration, read once from LINKMESH_*
// variables at start-up.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/linkmesh/linkmesh/pkg/config"
)

// Defaults for settings whose shared default does not fit this service.
const (
	DefaultListenAddr = "127.0.0.1:8085"
	DefaultDatabase   = "linkmesh_quota"
)

// Config is everything the quota service reads from its environment.
type Config struct {
	config.Service
	config.Mongo
	config.Redis

	// AnonQuota is how many anonymous link creations one identity key gets per AnonWindow.
	AnonQuota int `env:"LINKMESH_ANON_QUOTA" envDefault:"10"`
	// AnonWindow is the sliding window of AnonQuota.
	AnonWindow time.Duration `env:"LINKMESH_ANON_WINDOW" envDefault:"24h"`

	// LoginMaxFailures is how many failed logins one e-mail, and separately one client
	// identity key, may have per LoginWindow before logins answer 429.
	LoginMaxFailures int `env:"LINKMESH_LOGIN_MAX_FAILURES" envDefault:"10"`
	// LoginWindow is the sliding window of LoginMaxFailures.
	LoginWindow time.Duration `env:"LINKMESH_LOGIN_WINDOW" envDefault:"15m"`
}

// Load reads the environment, fills service defaults and validates the result.
func Load() (Config, error) {
	cfg, err := config.Load[Config]()
	if err != nil {
		return cfg, err
	}
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("validate config: %w", err)
	}
	return cfg, nil
}

func (c *Config) applyDefaults() {
	config.Defaults(&c.Service, &c.Mongo, DefaultListenAddr, DefaultDatabase)
}

// Validate checks the settings that have no safe default or a bounded range.
func (c Config) Validate() error {
	if err := c.Service.Validate(); err != nil {
		return err
	}
	if c.AnonQuota < 1 {
		return errors.New("LINKMESH_ANON_QUOTA must be at least 1")
	}
	// Durable buckets are per minute, so a shorter window could not survive a Redis restart.
	if c.AnonWindow < time.Minute {
		return errors.New("LINKMESH_ANON_WINDOW must be at least 1m")
	}
	if c.LoginMaxFailures < 1 {
		return errors.New("LINKMESH_LOGIN_MAX_FAILURES must be at least 1")
	}
	if c.LoginWindow < time.Minute {
		return errors.New("LINKMESH_LOGIN_WINDOW must be at least 1m")
	}
	return nil
}

// LogValue lists the settings for the start-up log line; secrets mask themselves.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("listen_addr", c.ListenAddr),
		slog.String("log_level", c.LogLevel),
		slog.Any("internal_secret", c.InternalSecret),
		slog.String("shutdown_drain", c.ShutdownDrain.String()),
		slog.Any("mongodb_uri", c.URI),
		slog.String("mongodb_database", c.Database),
		slog.Any("redis_url", c.URL),
		slog.Int("anon_quota", c.AnonQuota),
		slog.String("anon_window", c.AnonWindow.String()),
		slog.Int("login_max_failures", c.LoginMaxFailures),
		slog.String("login_window", c.LoginWindow.String()),
	)
}
