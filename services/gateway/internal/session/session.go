// Package session authenticates public requests by their go_session cookie against the auth
// service, applies the role and account-status gates, and signs the internal identity token
// that tells the services who is calling.
package session

import (
	"cmp"
	"context"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/ratelimit"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clientip"
)

// CookieName is the session cookie.
const CookieName = "go_session"

// maxToken bounds what is worth asking the auth service about; real tokens are 43 bytes.
const maxToken = 256

const (
	localsUser = "linkmesh.user"
	localsKey  = "linkmesh.identity_key"
)

// PlausibleToken reports whether a cookie value could be a session token at all; others are
// refused without asking the auth service.
func PlausibleToken(token string) bool { return token != "" && len(token) <= maxToken }

// Validator checks session tokens and API token secrets; *auth.Client satisfies it.
type Validator interface {
	Validate(ctx context.Context, token string) (auth.Validated, error)
	ValidateToken(ctx context.Context, secret string) (auth.TokenAuth, error)
}

// Gate authenticates requests and builds their callers.
type Gate struct {
	auth   Validator
	keys   *identity.Keys
	ips    *clientip.Resolver
	keyer  *clientip.Keyer
	secure bool
}

// NewGate returns a gate; secure adds the Secure attribute to the cookie (HTTPS deployments).
func NewGate(v Validator, keys *identity.Keys, ips *clientip.Resolver, keyer *clientip.Keyer, secure bool) *Gate {
	return &Gate{auth: v, keys: keys, ips: ips, keyer: keyer, secure: secure}
}

// clientAddr is the caller's address per the trusted-proxy rules.
func (g *Gate) clientAddr(c *fiber.Ctx) netip.Addr {
	addr, _ := g.ips.FromRequest(c)
	return addr
}

// IdentityKey is the HMAC of the caller's address: what quotas and audit records keep. It
// is derived once per request, however many internal calls carry it.
func (g *Gate) IdentityKey(c *fiber.Ctx) string {
	if key, ok := c.Locals(localsKey).(string); ok {
		return key
	}
	key := g.keyer.Key(g.clientAddr(c))
	c.Locals(localsKey, key)
	return key
}

// As returns the request context carrying a token for caller, with the client's IP hash and
// User-Agent filled in.
func (g *Gate) As(c *fiber.Ctx, caller identity.Caller) (context.Context, error) {
	caller.IPHash = g.IdentityKey(c)
	caller.UserAgent = strings.Clone(c.Get(fiber.HeaderUserAgent))
	return g.keys.WithCaller(c.UserContext(), caller)
}

// Rule is who may pass a gate.
type Rule struct {
	// MinRole is the lowest role admitted; empty admits anonymous callers too (a request
	// without credentials passes as anonymous; credentials that do not check out are still
	// a 401, never a silent downgrade).
	MinRole string
	// AllowRestricted admits banned and suspended users (me and logout); others get 403.
	AllowRestricted bool
	// Scope is the API token scope that opens the route; empty refuses tokens (403).
	Scope string
}

// Require admits only requests with a valid session whose user has at least minRole, and
// no API token.
func (g *Gate) Require(minRole string, allowRestricted bool) fiber.Handler {
	return g.Admit(Rule{MinRole: minRole, AllowRestricted: allowRestricted})
}

// Optional admits anonymous requests and sessions, and no API token.
func (g *Gate) Optional() fiber.Handler { return g.Admit(Rule{}) }

// Admit is the one gate of every authenticated route: an API token (Authorization: Bearer)
// decides if the request carries one, else the session cookie. On success the user is in
// UserOf(c) and the request context carries the caller's internal token.
func (g *Gate) Admit(r Rule) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if secret, ok, err := BearerToken(c); err != nil {
			return err
		} else if ok {
			return g.admitToken(c, secret, r)
		}
		token := c.Cookies(CookieName)
		if token != "" {
			return g.admit(c, token, cmp.Or(r.MinRole, auth.RoleUser), r.AllowRestricted)
		}
		if r.MinRole != "" {
			return errs.E(errs.KindUnauthenticated, "authentication required")
		}
		ctx, err := g.As(c, identity.Anonymous)
		if err != nil {
			return err
		}
		c.SetUserContext(ctx)
		return c.Next()
	}
}

// RefuseTokens answers 403 to a request that carries an API token: the routes it guards
// (/api/auth/*) sign in, out and up with passwords and sessions, never with a token.
func RefuseTokens(c *fiber.Ctx) error {
	if _, bearer, _ := BearerToken(c); bearer {
		return errs.Forbidden("API tokens are not accepted on this route")
	}
	return c.Next()
}

// BearerToken returns the API token secret of the request's Authorization field; ok is false
// without the field. Any other scheme is a 401: a client that sends credentials must learn
// that they were not used.
func BearerToken(c *fiber.Ctx) (secret string, ok bool, err error) {
	h := c.Get(fiber.HeaderAuthorization)
	if h == "" {
		return "", false, nil
	}
	scheme, value, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(value) == "" {
		return "", false, errs.E(errs.KindUnauthenticated, "Authorization must be Bearer and an API token")
	}
	return strings.TrimSpace(value), true, nil
}

// admitToken admits a request made with an API token secret: the token checks out (read
// fresh, so a revocation counts at once), its window has room (its headers go on every
// answer from here on), its owner is neither banned nor suspended, and it holds the route's
// scope.
func (g *Gate) admitToken(c *fiber.Ctx, secret string, r Rule) error {
	if r.Scope == "" {
		return errs.Forbidden("API tokens are not accepted on this route")
	}
	if !auth.PlausibleTokenSecret(secret) {
		return errs.E(errs.KindUnauthenticated, "API token invalid, expired or revoked")
	}
	ctx, err := g.As(c, identity.Anonymous)
	if err != nil {
		return err
	}
	ta, err := g.auth.ValidateToken(ctx, strings.Clone(secret))
	if err != nil {
		return err
	}
	ratelimit.Set(c, ta.Rate)
	if !ta.Allowed {
		return errs.TooMany("API token rate limit exceeded", time.Duration(ta.RetryAfterSeconds)*time.Second)
	}
	user := ta.User
	if !r.AllowRestricted {
		if err := restricted(user); err != nil {
			return err
		}
	}
	if !ta.HasScope(r.Scope) {
		return errs.Forbidden("token lacks scope %s", r.Scope)
	}
	if minRole := cmp.Or(r.MinRole, auth.RoleUser); auth.Rank(user.Role) < auth.Rank(minRole) {
		return errs.Forbidden("%s role required", minRole)
	}
	ctx, err = g.As(c, identity.Caller{UserID: user.ID, Role: user.Role, Status: user.Status, QuotaLimit: user.QuotaLimit,
		TokenID: ta.TokenID, EmailUnverified: !user.EmailVerified})
	if err != nil {
		return err
	}
	c.SetUserContext(ctx)
	c.Locals(localsUser, user)
	return c.Next()
}

func (g *Gate) admit(c *fiber.Ctx, token, minRole string, allowRestricted bool) error {
	if !PlausibleToken(token) {
		return errs.E(errs.KindUnauthenticated, "session expired or invalid")
	}
	ctx, err := g.As(c, identity.Anonymous)
	if err != nil {
		return err
	}
	v, err := g.auth.Validate(ctx, strings.Clone(token))
	if err != nil {
		return err
	}
	user := v.User
	if !allowRestricted {
		if err := restricted(user); err != nil {
			return err
		}
	}
	if auth.Rank(user.Role) < auth.Rank(minRole) {
		return errs.Forbidden("%s role required", minRole)
	}
	ctx, err = g.As(c, identity.Caller{UserID: user.ID, Role: user.Role, Status: user.Status, QuotaLimit: user.QuotaLimit,
		SessionID: v.SessionID, EmailUnverified: !user.EmailVerified})
	if err != nil {
		return err
	}
	c.SetUserContext(ctx)
	c.Locals(localsUser, user)
	return c.Next()
}

// restricted refuses banned and suspended accounts.
func restricted(u auth.User) error {
	switch u.Status {
	case auth.StatusBanned:
		return errs.Forbidden("account is banned")
	case auth.StatusSuspended:
		if u.TimeoutUntil != nil {
			return errs.Forbidden("account is suspended until %s", u.TimeoutUntil.UTC().Format(time.RFC3339))
		}
		return errs.Forbidden("account is suspended")
	}
	return nil
}

// UserOf returns the user Require or Optional admitted, if any.
func UserOf(c *fiber.Ctx) (auth.User, bool) {
	u, ok := c.Locals(localsUser).(auth.User)
	return u, ok
}

// SetCookie issues the session cookie for token, valid until expires.
func (g *Gate) SetCookie(c *fiber.Ctx, token string, expires time.Time) {
	maxAge := int(time.Until(expires).Seconds())
	if maxAge < 1 {
		maxAge = 1
	}
	c.Append(fiber.HeaderSetCookie, g.cookie(token, maxAge))
}

// ClearCookie tells the browser to drop the session cookie.
func (g *Gate) ClearCookie(c *fiber.Ctx) {
	c.Append(fiber.HeaderSetCookie, g.cookie("", 0))
}

// cookie is written by hand because fasthttp cannot express Max-Age=0.
func (g *Gate) cookie(value string, maxAge int) string {
	s := CookieName + "=" + value + "; Path=/; Max-Age=" + strconv.Itoa(maxAge) + "; HttpOnly; SameSite=Lax"
	if g.secure {
		s += "; Secure"
	}
	return s
}
