package session

import (
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// SameSite refuses cookie-carrying unsafe requests that a browser says came from another
// site (Sec-Fetch-Site: cross-site) or from an origin other than ours. Clients that send
// neither header (curl, servers) pass: they cannot be driven by a victim's browser.
func SameSite(baseURL string, allowed []string) fiber.Handler {
	origins := map[string]bool{origin(baseURL): true}
	for _, a := range allowed {
		if o := origin(strings.TrimSpace(a)); o != "" {
			origins[o] = true
		}
	}
	return func(c *fiber.Ctx) error {
		switch c.Method() {
		case fiber.MethodGet, fiber.MethodHead, fiber.MethodOptions:
			return c.Next()
		}
		if c.Cookies(CookieName) == "" {
			return c.Next()
		}
		if c.Get("Sec-Fetch-Site") == "cross-site" {
			return errs.Forbidden("cross-site request refused")
		}
		if o := c.Get(fiber.HeaderOrigin); o != "" && !origins[strings.ToLower(o)] {
			return errs.Forbidden("cross-site request refused")
		}
		return c.Next()
	}
}

// origin returns scheme://host[:port] of u, lower-cased, or "".
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return ""
	}
	return strings.ToLower(p.Scheme + "://" + p.Host)
}
