// Package config holds the link service's settings, read once from the environment.
package config

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/linkmesh/linkmesh/pkg/config"
)

// Config is every setting the link service reads.
type Config struct {
	config.Service
	// Datastores: MongoDB holds the links; Redis their resolved views and the broadcast of
	// their changes.
	config.Datastores
	// Peers locate the quota service, which counts creations.
	config.Peers
	// Public is the base of short links; links to its host are refused.
	config.Public
	// DNSTimeout bounds the destination lookup of the SSRF guard.
	DNSTimeout time.Duration `env:"LINKMESH_DNS_TIMEOUT" envDefault:"2s"`
	// DNSServer, host:port, sends the guard's lookups to one DNS server instead of the
	// system's resolvers (a cluster DNS, or a local one in tests).
	DNSServer string `env:"LINKMESH_DNS_SERVER"`
}

// Validate checks the link service's own settings; the boot path checks the shared ones.
func (c *Config) Validate() error {
	if c.DNSTimeout <= 0 || c.DNSTimeout > 2*time.Second {
		return fmt.Errorf("LINKMESH_DNS_TIMEOUT must be between 0 and 2s, got %s", c.DNSTimeout)
	}
	if c.DNSServer != "" {
		if _, _, err := net.SplitHostPort(c.DNSServer); err != nil {
			return fmt.Errorf("LINKMESH_DNS_SERVER must be host:port: %w", err)
		}
	}
	return nil
}

// LogValue lists the link service's own settings for the start-up line.
func (c *Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("dns_timeout", c.DNSTimeout.String()), slog.String("dns_server", c.DNSServer))
}

// Resolver is the DNS resolver the SSRF guard uses: the system's, or one pinned to DNSServer.
func (c *Config) Resolver() *net.Resolver {
	if c.DNSServer == "" {
		return net.DefaultResolver
	}
	server := c.DNSServer
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server)
	}}
}
