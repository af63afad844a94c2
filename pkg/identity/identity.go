// Package identity carries the caller's identity from the gateway to the services in a
// short-lived internal token signed with HS256. Services trust nothing else about the caller.
package identity

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TTL bounds every internal token; a stolen one is useless within a minute.
const TTL = time.Minute

const (
	issuer   = "linkmesh-gateway"
	audience = "linkmesh-internal"
)

// Roles a caller can have; RoleAnonymous is the role of a caller without a session.
const (
	RoleAnonymous  = "anonymous"
	RoleUser       = "user"
	RoleModerator  = "moderator"
	RoleSuperAdmin = "super_admin"
)

// AtLeastModerator reports whether the caller may act as a moderator.
func (c Caller) AtLeastModerator() bool { return c.Role == RoleModerator || c.Role == RoleSuperAdmin }

// Caller is who the gateway says is calling.
type Caller struct {
	UserID string // empty when anonymous
	Role   string // anonymous, user, moderator or super_admin
	Status string // active, suspended or banned; empty when anonymous
	// IPHash is the HMAC-SHA256 of the client IP under the server secret; the raw IP never
	// leaves the gateway. Empty for calls no client asked for (redirect cache fills).
	IPHash string
	// UserAgent is the client's User-Agent, at most MaxUserAgent bytes.
	UserAgent string
	// QuotaLimit is a signed-in user's quota_limit as the session gate read it on this very
	// request, so a changed limit applies to the next creation; 0 when anonymous.
	QuotaLimit int
}

// MaxUserAgent bounds the User-Agent carried in tokens and kept in audit records.
const MaxUserAgent = 512

var validRoles = map[string]bool{RoleAnonymous: true, RoleUser: true, RoleModerator: true, RoleSuperAdmin: true}

// Anonymous is the caller without a session.
var Anonymous = Caller{Role: RoleAnonymous}

// IsAnonymous reports whether the caller has no account.
func (c Caller) IsAnonymous() bool { return c.UserID == "" }

type claims struct {
	Role       string `json:"role"`
	Status     string `json:"status,omitempty"`
	IPHash     string `json:"iph,omitempty"`
	UserAgent  string `json:"ua,omitempty"`
	QuotaLimit int    `json:"ql,omitempty"`
	jwt.RegisteredClaims
}

// Keys signs and verifies internal tokens with one shared secret.
type Keys struct {
	secret []byte
	parser *jwt.Parser
	now    func() time.Time
}

// NewKeys returns Keys for secret, which must be at least 32 bytes.
func NewKeys(secret string) (*Keys, error) {
	if len(secret) < 32 {
		return nil, errors.New("internal token secret must be at least 32 bytes")
	}
	k := &Keys{secret: []byte(secret), now: time.Now}
	k.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithIssuer(issuer), jwt.WithAudience(audience),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(5*time.Second),
		jwt.WithTimeFunc(func() time.Time { return k.now() }),
	)
	return k, nil
}

// Sign issues a token for c valid for TTL.
func (k *Keys) Sign(c Caller) (string, error) {
	now := k.now()
	role := c.Role
	if role == "" {
		role = RoleAnonymous
	}
	ua := c.UserAgent
	if len(ua) > MaxUserAgent {
		ua = ua[:MaxUserAgent]
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims{
		Role: role, Status: c.Status, IPHash: c.IPHash, UserAgent: ua, QuotaLimit: c.QuotaLimit,
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: issuer, Audience: jwt.ClaimStrings{audience}, Subject: c.UserID,
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(TTL)),
		},
	})
	s, err := tok.SignedString(k.secret)
	if err != nil {
		return "", fmt.Errorf("sign internal token: %w", err)
	}
	return s, nil
}

// Verify checks signature, issuer, audience and expiry and returns the caller.
func (k *Keys) Verify(token string) (Caller, error) {
	var cl claims
	_, err := k.parser.ParseWithClaims(token, &cl, func(*jwt.Token) (any, error) { return k.secret, nil })
	if err != nil {
		return Caller{}, fmt.Errorf("verify internal token: %w", err)
	}
	if !validRoles[cl.Role] || (cl.Subject == "") != (cl.Role == RoleAnonymous) {
		return Caller{}, errors.New("verify internal token: inconsistent subject and role")
	}
	// Whoever signs must not mint long-lived tokens: the lifetime is ours to bound.
	if cl.IssuedAt == nil || cl.ExpiresAt.Sub(cl.IssuedAt.Time) > TTL {
		return Caller{}, errors.New("verify internal token: lifetime exceeds the limit")
	}
	return Caller{UserID: cl.Subject, Role: cl.Role, Status: cl.Status, IPHash: cl.IPHash, UserAgent: cl.UserAgent,
		QuotaLimit: cl.QuotaLimit}, nil
}

type tokenKey struct{}

// ContextWithToken attaches a signed token that outgoing internal calls will carry.
func ContextWithToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, tokenKey{}, token)
}

// TokenFromContext returns the token attached by ContextWithToken.
func TokenFromContext(ctx context.Context) string {
	s, _ := ctx.Value(tokenKey{}).(string)
	return s
}

// WithCaller signs a token for caller and attaches it to ctx for outgoing internal calls.
func (k *Keys) WithCaller(ctx context.Context, caller Caller) (context.Context, error) {
	tok, err := k.Sign(caller)
	if err != nil {
		return ctx, err
	}
	return ContextWithToken(ctx, tok), nil
}
