// Package config holds the gateway's settings, read once from the environment.
package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/linkmesh/linkmesh/pkg/config"
)

// Config is every setting the gateway reads.
type Config struct {
	config.Service
	config.Redis
	config.Peers
	BaseURL string `env:"LINKMESH_BASE_URL" envDefault:"http://localhost:8080"`
	// IdentitySecret keys the HMAC that turns a client IP into an identity key.
	IdentitySecret config.Secret `env:"LINKMESH_IDENTITY_SECRET"`
	// TrustedProxies are CIDRs whose X-Forwarded-For is believed.
	TrustedProxies []string `env:"LINKMESH_TRUSTED_PROXIES" envSeparator:","`
	// RedirectCacheSize bounds the in-process cache of resolved links (entries).
	RedirectCacheSize int           `env:"LINKMESH_REDIRECT_CACHE_SIZE" envDefault:"100000"`
	CaptchaVerifyURL  string        `env:"LINKMESH_CAPTCHA_VERIFY_URL"`
	CaptchaSecret     config.Secret `env:"LINKMESH_CAPTCHA_SECRET"`

	// CookieSecure adds Secure to the session cookie (HTTPS deployments).
	CookieSecure bool `env:"LINKMESH_COOKIE_SECURE" envDefault:"false"`

	// Proxies is TrustedProxies parsed.
	Proxies []netip.Prefix `env:"-"`
}

// Load reads and validates the configuration.
func Load() (Config, error) {
	cfg, err := config.Load[Config]()
	if err != nil {
		return cfg, err
	}
	config.Defaults(&cfg.Service, nil, "127.0.0.1:8080", "")
	if err := cfg.Service.Validate(); err != nil {
		return cfg, err
	}
	if len(cfg.IdentitySecret) < 32 {
		return cfg, errors.New("LINKMESH_IDENTITY_SECRET must be set to at least 32 characters")
	}
	if cfg.RedirectCacheSize < 1 {
		return cfg, errors.New("LINKMESH_REDIRECT_CACHE_SIZE must be positive")
	}
	if (cfg.CaptchaVerifyURL == "") != (cfg.CaptchaSecret == "") {
		return cfg, errors.New("LINKMESH_CAPTCHA_VERIFY_URL and LINKMESH_CAPTCHA_SECRET must be set together")
	}
	for _, s := range cfg.TrustedProxies {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := parsePrefix(s)
		if err != nil {
			return cfg, fmt.Errorf("LINKMESH_TRUSTED_PROXIES: %w", err)
		}
		cfg.Proxies = append(cfg.Proxies, p)
	}
	return cfg, nil
}

// parsePrefix accepts a CIDR or a single address.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked(), err
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}
