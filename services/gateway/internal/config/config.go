// Package config holds the gateway's settings, read once from the environment.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"

	"github.com/linkmesh/linkmesh/pkg/config"
)

// Config is every setting the gateway reads.
type Config struct {
	config.Service
	config.Redis
	config.Peers
	// Public is our own origin, the base of short links.
	config.Public
	// IdentitySecret keys the HMAC that turns a client IP into an identity key.
	IdentitySecret config.Secret `env:"LINKMESH_IDENTITY_SECRET"`
	// TrustedProxies are CIDRs whose X-Forwarded-For is believed.
	TrustedProxies []string `env:"LINKMESH_TRUSTED_PROXIES" envSeparator:","`
	// RedirectCacheSize bounds the in-process cache of resolved links (entries).
	RedirectCacheSize int           `env:"LINKMESH_REDIRECT_CACHE_SIZE" envDefault:"100000"`
	CaptchaVerifyURL  string        `env:"LINKMESH_CAPTCHA_VERIFY_URL"`
	CaptchaSecret     config.Secret `env:"LINKMESH_CAPTCHA_SECRET"`
	// CaptchaSiteKey and CaptchaScriptURL let the web application show the provider's widget
	// (hCaptcha or Cloudflare Turnstile); the script's origin joins the pages' policy.
	CaptchaSiteKey   string `env:"LINKMESH_CAPTCHA_SITE_KEY"`
	CaptchaScriptURL string `env:"LINKMESH_CAPTCHA_SCRIPT_URL"`

	// GeoIPDB is the path of a MaxMind DB country database; unset, countries come only from
	// a trusted edge's CF-IPCountry and are otherwise Unknown.
	GeoIPDB string `env:"LINKMESH_GEOIP_DB"`
	// ClickQueue bounds the visits waiting to become clicks; beyond it visits are dropped
	// and counted, never waited for.
	ClickQueue int `env:"LINKMESH_CLICK_QUEUE" envDefault:"100000"`
	// ClickSpool is the file the waiting visits are kept in, so that they outlive a crash of
	// the process; it holds client addresses, so it belongs on a memory-backed volume.
	// Unset, they wait in process memory.
	ClickSpool string `env:"LINKMESH_CLICK_SPOOL"`
	// ClickSpoolMB is the spool's size in MiB.
	ClickSpoolMB int `env:"LINKMESH_CLICK_SPOOL_MB" envDefault:"32"`

	// CookieSecure adds Secure to the session cookie (HTTPS deployments).
	CookieSecure bool `env:"LINKMESH_COOKIE_SECURE" envDefault:"false"`

	// Proxies is TrustedProxies parsed.
	Proxies []netip.Prefix `env:"-"`
}

// Validate checks the gateway's own settings and parses the trusted proxies; the boot path
// checks the shared ones.
func (c *Config) Validate() error {
	if len(c.IdentitySecret) < 32 {
		return errors.New("LINKMESH_IDENTITY_SECRET must be set to at least 32 characters")
	}
	if c.RedirectCacheSize < 1 {
		return errors.New("LINKMESH_REDIRECT_CACHE_SIZE must be positive")
	}
	if c.ClickQueue < 1 || c.ClickQueue > 10_000_000 {
		return fmt.Errorf("LINKMESH_CLICK_QUEUE must be between 1 and 10000000, got %d", c.ClickQueue)
	}
	if c.ClickSpoolMB < 1 || c.ClickSpoolMB > 4096 {
		return fmt.Errorf("LINKMESH_CLICK_SPOOL_MB must be between 1 and 4096, got %d", c.ClickSpoolMB)
	}
	if err := config.Together("LINKMESH_CAPTCHA_VERIFY_URL", c.CaptchaVerifyURL, "LINKMESH_CAPTCHA_SECRET", c.CaptchaSecret.Reveal()); err != nil {
		return err
	}
	if err := config.OptionalURL("LINKMESH_CAPTCHA_VERIFY_URL", c.CaptchaVerifyURL); err != nil {
		return err
	}
	if err := config.Together("LINKMESH_CAPTCHA_SITE_KEY", c.CaptchaSiteKey, "LINKMESH_CAPTCHA_SCRIPT_URL", c.CaptchaScriptURL); err != nil {
		return err
	}
	if c.CaptchaScriptURL != "" {
		if c.CaptchaVerifyURL == "" {
			return errors.New("LINKMESH_CAPTCHA_SITE_KEY needs LINKMESH_CAPTCHA_VERIFY_URL: a widget without a verifier proves nothing")
		}
		if u, err := url.Parse(c.CaptchaScriptURL); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("LINKMESH_CAPTCHA_SCRIPT_URL must be an https URL, got %q", c.CaptchaScriptURL)
		}
	}
	c.Proxies = nil
	for _, s := range c.TrustedProxies {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := parsePrefix(s)
		if err != nil {
			return fmt.Errorf("LINKMESH_TRUSTED_PROXIES: %w", err)
		}
		c.Proxies = append(c.Proxies, p)
	}
	return nil
}

// LogValue lists the gateway's own settings for the start-up line; secrets mask themselves.
func (c *Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("identity_secret", c.IdentitySecret),
		slog.Any("trusted_proxies", c.TrustedProxies),
		slog.Int("redirect_cache_size", c.RedirectCacheSize),
		slog.String("captcha_verify_url", c.CaptchaVerifyURL),
		slog.Any("captcha_secret", c.CaptchaSecret),
		slog.String("captcha_site_key", c.CaptchaSiteKey),
		slog.String("captcha_script_url", c.CaptchaScriptURL),
		slog.Bool("cookie_secure", c.CookieSecure),
		slog.String("geoip_db", c.GeoIPDB),
		slog.Int("click_queue", c.ClickQueue),
		slog.String("click_spool", c.ClickSpool),
		slog.Int("click_spool_mb", c.ClickSpoolMB),
	)
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
