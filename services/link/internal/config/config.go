// Package config holds the link service's settings, read once from the environment.
package config

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/linkmesh/linkmesh/pkg/config"
)

// Config is every setting the link service reads.
type Config struct {
	config.Service
	config.Mongo
	config.Redis
	// BaseURL is the public base of short links; links to its host are refused.
	BaseURL string `env:"LINKMESH_BASE_URL" envDefault:"http://localhost:8080"`
	// DNSTimeout bounds the destination lookup of the SSRF guard.
	DNSTimeout time.Duration `env:"LINKMESH_DNS_TIMEOUT" envDefault:"2s"`
	// DNSServer, host:port, sends the guard's lookups to one DNS server instead of the
	// system's resolvers (a cluster DNS, or a local one in tests).
	DNSServer string `env:"LINKMESH_DNS_SERVER"`
}

// Load reads and validates the configuration.
func Load() (Config, error) {
	cfg, err := config.Load[Config]()
	if err != nil {
		return cfg, err
	}
	config.Defaults(&cfg.Service, &cfg.Mongo, "127.0.0.1:8082", "linkmesh_link")
	if err := cfg.Service.Validate(); err != nil {
		return cfg, err
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cfg, fmt.Errorf("LINKMESH_BASE_URL must be an absolute http(s) URL, got %q", cfg.BaseURL)
	}
	if cfg.DNSTimeout <= 0 || cfg.DNSTimeout > 2*time.Second {
		return cfg, fmt.Errorf("LINKMESH_DNS_TIMEOUT must be between 0 and 2s, got %s", cfg.DNSTimeout)
	}
	if cfg.DNSServer != "" {
		if _, _, err := net.SplitHostPort(cfg.DNSServer); err != nil {
			return cfg, fmt.Errorf("LINKMESH_DNS_SERVER must be host:port: %w", err)
		}
	}
	return cfg, nil
}

// Resolver is the DNS resolver the SSRF guard uses: the system's, or one pinned to DNSServer.
func (c Config) Resolver() *net.Resolver {
	if c.DNSServer == "" {
		return net.DefaultResolver
	}
	server := c.DNSServer
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server)
	}}
}
