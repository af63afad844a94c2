package config

import (
	"errors"
	"time"
)

// Service holds the settings every linkmesh service reads.
type Service struct {
	ListenAddr string `env:"LINKMESH_LISTEN_ADDR"`
	LogLevel   string `env:"LINKMESH_LOG_LEVEL" envDefault:"info"`
	// InternalSecret signs and verifies the gateway's short-lived identity tokens.
	InternalSecret Secret `env:"LINKMESH_INTERNAL_SECRET"`
	// ShutdownDrain is how long readiness fails before the listener closes, so that load
	// balancers stop routing here first.
	ShutdownDrain time.Duration `env:"LINKMESH_SHUTDOWN_DRAIN" envDefault:"0s"`
}

// Validate checks the settings that have no safe default.
func (s Service) Validate() error {
	if len(s.InternalSecret) < 32 {
		return errors.New("LINKMESH_INTERNAL_SECRET must be set to at least 32 characters")
	}
	return nil
}

// Mongo holds the MongoDB settings of a service that owns a database.
type Mongo struct {
	URI      Secret `env:"LINKMESH_MONGODB_URI" envDefault:"mongodb://127.0.0.1:27017/"`
	Database string `env:"LINKMESH_MONGODB_DATABASE"`
}

// Redis holds the Redis settings.
type Redis struct {
	URL Secret `env:"LINKMESH_REDIS_URL" envDefault:"redis://127.0.0.1:6379/0"`
}

// Peers are the base URLs of the other services.
type Peers struct {
	AuthURL       string `env:"LINKMESH_AUTH_URL" envDefault:"http://127.0.0.1:8081"`
	LinkURL       string `env:"LINKMESH_LINK_URL" envDefault:"http://127.0.0.1:8082"`
	AnalyticsURL  string `env:"LINKMESH_ANALYTICS_URL" envDefault:"http://127.0.0.1:8083"`
	ModerationURL string `env:"LINKMESH_MODERATION_URL" envDefault:"http://127.0.0.1:8084"`
	QuotaURL      string `env:"LINKMESH_QUOTA_URL" envDefault:"http://127.0.0.1:8085"`
}

// Defaults fills the listen address and database (m may be nil) a service uses when the
// environment names none.
func Defaults(s *Service, m *Mongo, listen, database string) {
	if s.ListenAddr == "" {
		s.ListenAddr = listen
	}
	if m != nil && m.Database == "" {
		m.Database = database
	}
}
