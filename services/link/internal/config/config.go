// Package config holds the link service's settings, read once from the environment.
package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/ncruces/go-dns"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/services/link/internal/webhooks"
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
	// DNSCacheTTL caps how long a resolver's answer is reused within its own TTL; 0 turns
	// the cache off.
	DNSCacheTTL time.Duration `env:"LINKMESH_DNS_CACHE_TTL" envDefault:"5m"`
	// DNSNegativeTTL is how long a name that resolved to nothing (no such name, no answer
	// within DNSTimeout) is not asked about again; 0 asks every time.
	DNSNegativeTTL time.Duration `env:"LINKMESH_DNS_NEGATIVE_TTL" envDefault:"10s"`
	// WebhookKey seals the webhooks' signing secrets at rest (AES-256-GCM under its
	// SHA-256); changing it makes every stored secret unreadable.
	WebhookKey config.Secret `env:"LINKMESH_WEBHOOK_KEY"`
	// WebhookAllowedCIDRs are internal ranges webhooks may deliver to (the operator's own
	// receivers), over plain HTTP too; empty allows none.
	WebhookAllowedCIDRs string `env:"LINKMESH_WEBHOOK_ALLOWED_CIDRS"`
	// WebhookRetryBase scales the retry schedule of deliveries (5 s: retries after 5 s, 5 min,
	// 30 min, 2 h, 5 h, 8 h and 8 h: about 24 h).
	WebhookRetryBase time.Duration `env:"LINKMESH_WEBHOOK_RETRY_BASE" envDefault:"5s"`
}

// dnsCacheEntries bounds the answers the resolver cache keeps.
const dnsCacheEntries = 10000

// Validate checks the link service's own settings; the boot path checks the shared ones.
func (c *Config) Validate() error {
	if c.DNSTimeout <= 0 || c.DNSTimeout > 2*time.Second {
		return fmt.Errorf("LINKMESH_DNS_TIMEOUT must be above 0 and at most 2s, got %s", c.DNSTimeout)
	}
	if c.DNSCacheTTL < 0 || c.DNSCacheTTL > time.Hour {
		return fmt.Errorf("LINKMESH_DNS_CACHE_TTL must be between 0 and 1h, got %s", c.DNSCacheTTL)
	}
	if c.DNSNegativeTTL < 0 || c.DNSNegativeTTL > time.Minute {
		return fmt.Errorf("LINKMESH_DNS_NEGATIVE_TTL must be between 0 and 1m, got %s", c.DNSNegativeTTL)
	}
	if len(c.WebhookKey.Reveal()) < 32 {
		return errors.New("LINKMESH_WEBHOOK_KEY must be set to at least 32 characters")
	}
	if _, err := webhookCIDRs(c.WebhookAllowedCIDRs); err != nil {
		return fmt.Errorf("LINKMESH_WEBHOOK_ALLOWED_CIDRS: %w", err)
	}
	if c.WebhookRetryBase < 10*time.Millisecond || c.WebhookRetryBase > time.Minute {
		return fmt.Errorf("LINKMESH_WEBHOOK_RETRY_BASE must be between 10ms and 1m, got %s", c.WebhookRetryBase)
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
	return slog.GroupValue(slog.String("dns_timeout", c.DNSTimeout.String()), slog.String("dns_server", c.DNSServer),
		slog.String("dns_cache_ttl", c.DNSCacheTTL.String()), slog.String("dns_negative_ttl", c.DNSNegativeTTL.String()),
		slog.String("webhook_allowed_cidrs", c.WebhookAllowedCIDRs), slog.String("webhook_retry_base", c.WebhookRetryBase.String()))
}

// WebhookCIDRs are the ranges webhooks may deliver to although internal.
func (c *Config) WebhookCIDRs() []netip.Prefix {
	p, _ := webhookCIDRs(c.WebhookAllowedCIDRs) // checked by Validate
	return p
}

// Resolver is the DNS resolver the SSRF guard uses: the system's, or one pinned to
// DNSServer, with answers reused within their TTL (at most DNSCacheTTL). The cache is
// ncruces/go-dns's: it sits under Go's own resolver, at the DNS message level, so it sees
// and honours each record's TTL, which net.Resolver never exposes.
func (c *Config) Resolver() *net.Resolver {
	base := &net.Resolver{PreferGo: true}
	if c.DNSServer != "" {
		server := c.DNSServer
		base.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		}
	}
	if c.DNSCacheTTL == 0 {
		if c.DNSServer == "" {
			return net.DefaultResolver
		}
		return base
	}
	// Negative answers are kept by the guard itself, for DNSNegativeTTL, whatever the zone
	// says: it also covers lookups that got no answer at all.
	return dns.NewCachingResolver(base, dns.MaxCacheEntries(dnsCacheEntries), dns.MaxCacheTTL(c.DNSCacheTTL), dns.NegativeCache(false))
}

// webhookCIDRs reads a comma-separated list of CIDRs or addresses.
func webhookCIDRs(s string) ([]netip.Prefix, error) { return webhooks.ParseCIDRs(s) }
