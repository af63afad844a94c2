package config

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// The guard's resolver reuses an answer within its TTL (60 s here): the second lookup of a
// name sends no query. With the cache off, every lookup asks again.
func TestResolverCachesAnswersWithinTheirTTL(t *testing.T) {
	srv := testenv.NewDNS(t, map[string][]netip.Addr{"public.test": {netip.MustParseAddr("93.184.216.34")}})
	for _, tc := range []struct {
		ttl    time.Duration
		cached bool
	}{{5 * time.Minute, true}, {0, false}} {
		cfg := Config{DNSServer: srv.Addr(), DNSCacheTTL: tc.ttl}
		r := cfg.Resolver()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		// A fully qualified name, so no search domain of this machine adds queries.
		addrs, err := r.LookupNetIP(ctx, "ip4", "public.test.")
		if err != nil || len(addrs) != 1 || addrs[0] != netip.MustParseAddr("93.184.216.34") {
			t.Fatalf("ttl %s: first lookup %v, %v", tc.ttl, addrs, err)
		}
		before := srv.Queries()
		for range 2 {
			if _, err := r.LookupNetIP(ctx, "ip4", "public.test."); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		if got := srv.Queries() - before; (got == 0) != tc.cached {
			t.Fatalf("ttl %s: two more lookups sent %d queries, want cached %v", tc.ttl, got, tc.cached)
		}
	}
}

func TestValidateDNSCacheSettings(t *testing.T) {
	for name, c := range map[string]Config{
		"negative cache ttl": {DNSTimeout: time.Second, DNSCacheTTL: -time.Second},
		"huge cache ttl":     {DNSTimeout: time.Second, DNSCacheTTL: 2 * time.Hour},
		"huge negative ttl":  {DNSTimeout: time.Second, DNSNegativeTTL: 2 * time.Minute},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := Config{DNSTimeout: time.Second, DNSCacheTTL: 5 * time.Minute, DNSNegativeTTL: 10 * time.Second,
		WebhookKey: "0123456789abcdef0123456789abcdef", WebhookRetryBase: 5 * time.Second}
	if err := ok.Validate(); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}

func TestValidateWebhookSettings(t *testing.T) {
	base := Config{DNSTimeout: time.Second, WebhookKey: "0123456789abcdef0123456789abcdef", WebhookRetryBase: 5 * time.Second}
	for name, change := range map[string]func(*Config){
		"short key":       func(c *Config) { c.WebhookKey = "too-short" },
		"no key":          func(c *Config) { c.WebhookKey = "" },
		"bad cidr":        func(c *Config) { c.WebhookAllowedCIDRs = "10.0.0.0/33" },
		"not an address":  func(c *Config) { c.WebhookAllowedCIDRs = "10.0.0.0/8, intranet" },
		"tiny retry base": func(c *Config) { c.WebhookRetryBase = time.Millisecond },
		"huge retry base": func(c *Config) { c.WebhookRetryBase = time.Hour },
	} {
		c := base
		change(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	c := base
	c.WebhookAllowedCIDRs = " 10.0.0.0/8, 127.0.0.1 ,fd00::/8"
	if err := c.Validate(); err != nil || len(c.WebhookCIDRs()) != 3 || c.WebhookCIDRs()[1].Bits() != 32 {
		t.Fatalf("%v %v", c.WebhookCIDRs(), err)
	}
}
