package session

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// SameSite refuses unsafe browser requests from another site when they carry a session
// cookie or would start a session (/api/auth/*: a forged login would sign the victim in as
// the attacker). "Another site" is what the browser says: Sec-Fetch-Site: cross-site, or an
// Origin other than ours. Clients that send neither header (curl, servers) pass: no victim's
// browser can be driven to omit them.
func SameSite(baseURL string) fiber.Handler {
	own := origin(baseURL)
	return func(c *fiber.Ctx) error {
		switch c.Method() {
		case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
			return c.Next()
		}
		if c.Cookies(CookieName) == "" && !strings.HasPrefix(c.Path(), "/api/auth/") {
			return c.Next()
		}
		// A token request is decided by its token, which no other site can make a browser
		// send; /api/auth/* refuses tokens (RefuseTokens), after this check.
		if _, bearer, _ := BearerToken(c); bearer && !strings.HasPrefix(c.Path(), "/api/auth/") {
			return c.Next()
		}
		if c.Get("Sec-Fetch-Site") == "cross-site" {
			return errs.Forbidden("cross-site request refused")
		}
		if o := c.Get(fiber.HeaderOrigin); o != "" && origin(o) != own {
			return errs.Forbidden("cross-site request refused")
		}
		return c.Next()
	}
}

// origin returns scheme://host[:port] of u, lower-cased, without a default port, or "" (so
// "null" and garbage never match).
func origin(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Scheme == "" || p.Host == "" {
		return ""
	}
	scheme, host := strings.ToLower(p.Scheme), strings.ToLower(p.Hostname())
	port := p.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host
}
