package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"
)

// Service holds the settings every linkmesh service reads.
type Service struct {
	ListenAddr string `env:"LINKMESH_LISTEN_ADDR"`
	LogLevel   string `env:"LINKMESH_LOG_LEVEL" envDefault:"info"`
	// InternalKey is this service's Ed25519 private key (PKCS #8 PEM): it signs the internal
	// tokens of the calls it makes.
	InternalKey Secret `env:"LINKMESH_INTERNAL_KEY"`
	// InternalCerts is the PEM bundle of every service's certificate (common name = service
	// name): the public keys internal tokens are verified with.
	InternalCerts string `env:"LINKMESH_INTERNAL_CERTS"`
	// ShutdownDrain is how long readiness fails before the listener closes, so that load
	// balancers stop routing here first.
	ShutdownDrain time.Duration `env:"LINKMESH_SHUTDOWN_DRAIN" envDefault:"0s"`
	// DebugAddr, when set, serves Go's runtime profiles (/debug/pprof/) on a listener of its
	// own, never on the service's port. Keep it on loopback or a port no one outside reaches.
	DebugAddr string `env:"LINKMESH_DEBUG_ADDR"`
	// MetricsAddr, when set, serves Prometheus metrics (/metrics) on a listener of its own,
	// never on the service's port; unset, no route is measured.
	MetricsAddr string `env:"LINKMESH_METRICS_ADDR"`
}

// Common returns the shared settings; every service config has it through embedding.
func (s *Service) Common() *Service { return s }

// Validate checks the settings that have no safe default.
func (s Service) Validate() error {
	if s.InternalKey == "" || s.InternalCerts == "" {
		return errors.New("LINKMESH_INTERNAL_KEY and LINKMESH_INTERNAL_CERTS must be set")
	}
	if _, err := ParseLogLevel(s.LogLevel); err != nil {
		return err
	}
	if s.ShutdownDrain < 0 || s.ShutdownDrain > time.Minute {
		return fmt.Errorf("LINKMESH_SHUTDOWN_DRAIN must be between 0s and 1m, got %s", s.ShutdownDrain)
	}
	for _, a := range []struct{ name, addr string }{{"LINKMESH_DEBUG_ADDR", s.DebugAddr}, {"LINKMESH_METRICS_ADDR", s.MetricsAddr}} {
		if a.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return fmt.Errorf("%s must be host:port, got %q", a.name, a.addr)
		}
	}
	if s.MetricsAddr != "" && s.MetricsAddr == s.DebugAddr {
		return errors.New("LINKMESH_METRICS_ADDR and LINKMESH_DEBUG_ADDR must differ")
	}
	return nil
}

// ParseLogLevel reads debug, info, warn or error (any letter case). An unknown level is an
// error rather than a silent info: an operator who asked for debug must not be left guessing.
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("LINKMESH_LOG_LEVEL must be debug, info, warn or error, got %q", s)
}

// Mongo holds the MongoDB settings of a service that owns a database.
type Mongo struct {
	URI      Secret `env:"LINKMESH_MONGODB_URI" envDefault:"mongodb://127.0.0.1:27017/"`
	Database string `env:"LINKMESH_MONGODB_DATABASE"`
}

// MongoSettings returns the MongoDB settings; a config that embeds Mongo owns a database.
func (m *Mongo) MongoSettings() *Mongo { return m }

// Redis holds the Redis settings.
type Redis struct {
	URL Secret `env:"LINKMESH_REDIS_URL" envDefault:"redis://127.0.0.1:6379/0"`
}

// RedisSettings returns the Redis settings; a config that embeds Redis uses Redis.
func (r *Redis) RedisSettings() *Redis { return r }

// Datastores are the settings of a service that owns a MongoDB database and uses Redis.
type Datastores struct {
	Mongo
	Redis
}

// Peers are the base URLs of the other services; unset ones default to DefaultURL.
type Peers struct {
	AuthURL       string `env:"LINKMESH_AUTH_URL"`
	LinkURL       string `env:"LINKMESH_LINK_URL"`
	AnalyticsURL  string `env:"LINKMESH_ANALYTICS_URL"`
	ModerationURL string `env:"LINKMESH_MODERATION_URL"`
	QuotaURL      string `env:"LINKMESH_QUOTA_URL"`
}

// PeerSettings returns the peer URLs; a config that embeds Peers calls other services.
func (p *Peers) PeerSettings() *Peers { return p }

// Public holds the public base of short links, which the gateway and the link service share.
type Public struct {
	BaseURL string `env:"LINKMESH_BASE_URL" envDefault:"http://localhost:8080"`
}

// PublicSettings returns the public settings.
func (p *Public) PublicSettings() *Public { return p }

// Validate checks that the base is an absolute http(s) URL.
func (p Public) Validate() error { return AbsoluteURL("LINKMESH_BASE_URL", p.BaseURL) }

// AbsoluteURL checks that the setting name holds an absolute http(s) URL with a host.
func AbsoluteURL(name, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s must be an absolute http(s) URL, got %q", name, raw)
	}
	return nil
}

// Together refuses a pair of settings of which only one is set: they mean something only
// with each other (an issuer and its client id, a verify URL and its secret).
func Together(nameA, a, nameB, b string) error {
	if (a == "") != (b == "") {
		return fmt.Errorf("%s and %s must be set together", nameA, nameB)
	}
	return nil
}

// OptionalURL is AbsoluteURL for a setting that may be left unset.
func OptionalURL(name, raw string) error {
	if raw == "" {
		return nil
	}
	return AbsoluteURL(name, raw)
}

// The services, in the order their default ports run.
const (
	Gateway    = "gateway"
	Auth       = "auth"
	Link       = "link"
	Analytics  = "analytics"
	Moderation = "moderation"
	Quota      = "quota"
)

// DefaultAddr is where a service listens on one machine when LINKMESH_LISTEN_ADDR is unset;
// peers find it there when their LINKMESH_<SERVICE>_URL is unset. This is the one table of
// default addresses.
func DefaultAddr(service string) string {
	port, ok := map[string]string{
		Gateway: "8080", Auth: "8081", Link: "8082", Analytics: "8083", Moderation: "8084", Quota: "8085",
	}[service]
	if !ok {
		return ""
	}
	return "127.0.0.1:" + port
}

// DefaultURL is the base URL of a service at its default address.
func DefaultURL(service string) string { return "http://" + DefaultAddr(service) }

// DefaultDatabase is the MongoDB database a service owns when LINKMESH_MONGODB_DATABASE is unset.
func DefaultDatabase(service string) string { return "linkmesh_" + service }

// ApplyDefaults fills what the environment left unset for service: its listen address, its
// database (m may be nil) and its peers' URLs (p may be nil).
func ApplyDefaults(service string, s *Service, m *Mongo, p *Peers) {
	if s.ListenAddr == "" {
		s.ListenAddr = DefaultAddr(service)
	}
	if m != nil && m.Database == "" {
		m.Database = DefaultDatabase(service)
	}
	if p != nil {
		for _, peer := range []struct {
			url  *string
			name string
		}{{&p.AuthURL, Auth}, {&p.LinkURL, Link}, {&p.AnalyticsURL, Analytics}, {&p.ModerationURL, Moderation}, {&p.QuotaURL, Quota}} {
			if *peer.url == "" {
				*peer.url = DefaultURL(peer.name)
			}
		}
	}
}

// Validate checks every peer URL.
func (p Peers) Validate() error {
	for _, peer := range []struct{ name, url string }{
		{"LINKMESH_AUTH_URL", p.AuthURL}, {"LINKMESH_LINK_URL", p.LinkURL}, {"LINKMESH_ANALYTICS_URL", p.AnalyticsURL},
		{"LINKMESH_MODERATION_URL", p.ModerationURL}, {"LINKMESH_QUOTA_URL", p.QuotaURL},
	} {
		if err := AbsoluteURL(peer.name, peer.url); err != nil {
			return err
		}
	}
	return nil
}
