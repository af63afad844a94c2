package service

import (
	"fmt"
	"log/slog"

	"github.com/caarlos0/env/v11"

	"github.com/linkmesh/linkmesh/pkg/config"
)

// The shared parts a service's Config may embed; each is found by the method its embedded
// struct promotes.
type (
	mongoConfig  interface{ MongoSettings() *config.Mongo }
	redisConfig  interface{ RedisSettings() *config.Redis }
	peersConfig  interface{ PeerSettings() *config.Peers }
	publicConfig interface{ PublicSettings() *config.Public }
)

// Load reads cfg from the environment once, fills what it left unset for service name and
// validates the result.
func Load(name string, cfg Config) error {
	if err := env.Parse(cfg); err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	return prepare(name, cfg)
}

// MongoOf returns cfg's MongoDB settings, nil when the service owns no database.
func MongoOf(cfg Config) *config.Mongo {
	if mc, ok := cfg.(mongoConfig); ok {
		return mc.MongoSettings()
	}
	return nil
}

// RedisOf returns cfg's Redis settings, nil when the service uses no Redis.
func RedisOf(cfg Config) *config.Redis {
	if rc, ok := cfg.(redisConfig); ok {
		return rc.RedisSettings()
	}
	return nil
}

// prepare fills the defaults the environment left unset for service name and validates the
// shared settings, then the service's own.
func prepare(name string, cfg Config) error {
	if cfg.Common().ListenAddr == "" && config.DefaultAddr(name) == "" {
		return fmt.Errorf("validate config: %s has no default address; set LINKMESH_LISTEN_ADDR", name)
	}
	m := MongoOf(cfg)
	var p *config.Peers
	if pc, ok := cfg.(peersConfig); ok {
		p = pc.PeerSettings()
	}
	config.ApplyDefaults(name, cfg.Common(), m, p)
	checks := []func() error{cfg.Common().Validate}
	if p != nil {
		checks = append(checks, p.Validate)
	}
	if pc, ok := cfg.(publicConfig); ok {
		checks = append(checks, pc.PublicSettings().Validate)
	}
	checks = append(checks, cfg.Validate)
	for _, check := range checks {
		if err := check(); err != nil {
			return fmt.Errorf("validate config: %w", err)
		}
	}
	return nil
}

// commonLogValue lists the shared settings for the start-up line, the same way for every
// service; secrets mask themselves.
func commonLogValue(cfg Config) slog.Value {
	s := cfg.Common()
	attrs := []slog.Attr{
		slog.String("listen_addr", s.ListenAddr),
		slog.String("log_level", s.LogLevel),
		slog.Any("internal_key", s.InternalKey),
		slog.String("shutdown_drain", s.ShutdownDrain.String()),
		slog.String("debug_addr", s.DebugAddr),
		slog.String("metrics_addr", s.MetricsAddr),
	}
	if m := MongoOf(cfg); m != nil {
		attrs = append(attrs, slog.Any("mongodb_uri", m.URI), slog.String("mongodb_database", m.Database))
	}
	if r := RedisOf(cfg); r != nil {
		attrs = append(attrs, slog.Any("redis_url", r.URL))
	}
	if pc, ok := cfg.(peersConfig); ok {
		p := pc.PeerSettings()
		attrs = append(attrs, slog.String("auth_url", p.AuthURL), slog.String("link_url", p.LinkURL),
			slog.String("analytics_url", p.AnalyticsURL), slog.String("moderation_url", p.ModerationURL),
			slog.String("quota_url", p.QuotaURL))
	}
	if pc, ok := cfg.(publicConfig); ok {
		attrs = append(attrs, slog.String("base_url", pc.PublicSettings().BaseURL))
	}
	return slog.GroupValue(attrs...)
}
