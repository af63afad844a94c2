// Package identity carries the caller's identity from the gateway to the services in
// short-lived internal tokens signed with Ed25519 (EdDSA JWTs).
//
// Every service has a key pair of its own; every service knows the public keys of all of them
// (one certificate per service, see KeySet). Three kinds of token exist, each addressed to
// exactly one receiving service (its audience), each valid for at most TTL:
//
//   - a caller token, signed by the gateway: who the end user is (subject, role, status, IP hash,
//     User-Agent, quota limit). Only the gateway's key can sign one, so no other service can
//     mint a caller — a compromised service cannot make itself a super admin;
//   - a passed-on token, signed by a service S for a peer T, carrying the token S received
//     (whose audience must be S): S acts for that same caller and can assert nothing of its own;
//   - a service token, signed by a service S for a peer T, with no caller at all: S acting as
//     itself for work no request asked for (a sweeper finishing an interrupted step). Receivers
//     decide, per operation, which services may do what (Caller.IsService).
//
// A token addressed to one service is refused by every other, and every hop of a chain must be
// an edge of the call graph (Calls): a service that calls no one (quota, analytics) can pass
// nothing on, and a service token cannot be passed on at all.
package identity

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/linkmesh/linkmesh/pkg/config"
)

// TTL bounds every internal token; a stolen one is useless within a minute.
const TTL = time.Minute

// Gateway is the one service whose tokens may name a caller.
const Gateway = config.Gateway

// Calls is the call graph: the services each service calls. A token is accepted only along
// one of its edges. The chart's contract and the code's peer clients say the same (tests keep
// them in step).
var Calls = map[string][]string{
	Gateway:           {config.Auth, config.Link, config.Moderation},
	config.Auth:       {config.Quota, config.Moderation, config.Link},
	config.Link:       {config.Quota, config.Analytics, config.Moderation},
	config.Analytics:  nil,
	config.Moderation: {config.Link, config.Auth, config.Analytics, config.Quota},
	config.Quota:      nil,
}

// maxChain bounds how many tokens a chain holds: gateway → moderation → link → moderation (a
// moderator disables a reported link, and link writes the audit entry) is the longest path
// the services take. It also bounds a token's size: each hop wraps the one before.
const maxChain = 3

// Roles a caller can have; RoleAnonymous is the role of a caller without a session and
// RoleService the role of a service acting as itself.
const (
	RoleAnonymous  = "anonymous"
	RoleUser       = "user"
	RoleModerator  = "moderator"
	RoleSuperAdmin = "super_admin"
	RoleService    = "service"
)

// AtLeastModerator reports whether the caller may act as a moderator.
func (c Caller) AtLeastModerator() bool { return c.Role == RoleModerator || c.Role == RoleSuperAdmin }

// Caller is who the gateway says is calling, or the service acting as itself.
type Caller struct {
	UserID string // empty when anonymous or a service
	Role   string // anonymous, user, moderator, super_admin or service
	Status string // active, suspended or banned; empty when anonymous
	// IPHash is the HMAC-SHA256 of the client IP under the server secret; the raw IP never
	// leaves the gateway. Empty for calls no client asked for (redirect cache fills).
	IPHash string
	// UserAgent is the client's User-Agent, at most MaxUserAgent bytes.
	UserAgent string
	// QuotaLimit is a signed-in user's quota_limit as the session gate read it on this very
	// request, so a changed limit applies to the next creation; 0 when anonymous.
	QuotaLimit int
	// TokenID is the id of the API token the user authenticated with; empty for a session.
	// A token may not manage tokens, so the auth service refuses callers that carry one.
	TokenID string
	// SessionID is the public id of the session the user signed in with; empty for a token.
	SessionID string
	// EmailUnverified marks a signed-in user whose e-mail address is not verified yet: they
	// may not create links. False for everyone else.
	EmailUnverified bool
	// Service names the service acting as itself (Role is RoleService); empty otherwise.
	Service string
}

// MaxUserAgent bounds the User-Agent carried in tokens and kept in audit records.
const MaxUserAgent = 512

// userRoles are the roles a caller token may carry; RoleService is never the gateway's to give.
var userRoles = map[string]bool{RoleAnonymous: true, RoleUser: true, RoleModerator: true, RoleSuperAdmin: true}

// Anonymous is the caller without a session.
var Anonymous = Caller{Role: RoleAnonymous}

// IsAnonymous reports whether the caller is an end user without an account.
func (c Caller) IsAnonymous() bool { return c.UserID == "" && c.Role != RoleService }

// IsService reports whether the caller is the named service acting as itself.
func (c Caller) IsService(name string) bool { return c.Role == RoleService && c.Service == name }

type claims struct {
	Role       string `json:"role,omitempty"`
	Status     string `json:"status,omitempty"`
	IPHash     string `json:"iph,omitempty"`
	UserAgent  string `json:"ua,omitempty"`
	QuotaLimit int    `json:"ql,omitempty"`
	TokenID    string `json:"tok,omitempty"`
	SessionID  string `json:"sid,omitempty"`
	Unverified bool   `json:"euv,omitempty"`
	// OnBehalfOf is the token a service received and passes on.
	OnBehalfOf string `json:"obo,omitempty"`
	jwt.RegisteredClaims
}

// namesCaller reports whether cl carries any claim about an end user.
func (cl *claims) namesCaller() bool {
	return cl.Subject != "" || cl.Role != "" || cl.Status != "" || cl.IPHash != "" || cl.UserAgent != "" || cl.QuotaLimit != 0 || cl.TokenID != "" || cl.SessionID != "" || cl.Unverified
}

// Keys signs the tokens of one service and verifies the tokens addressed to it.
type Keys struct {
	self   string
	priv   ed25519.PrivateKey
	kid    string
	pubs   map[string][]ed25519.PublicKey
	byKID  map[string]issuerKey
	parser *jwt.Parser
	now    func() time.Time
	// signed and verified remember tokens (see memory.go).
	signed   tokenMemory[string]
	verified tokenMemory[Caller]
}

// NewKeys returns the keys of service self: privateKeyPEM is its Ed25519 private key (PKCS #8
// PEM) and certsPEM the certificates of every service (see ParseCertificates), which must
// include one of self's matching the private key, and the gateway's. A service may have
// several certificates (a rotation): tokens are verified against whichever their `kid` names.
func NewKeys(self, privateKeyPEM, certsPEM string) (*Keys, error) {
	priv, err := ParsePrivateKey(privateKeyPEM)
	if err != nil {
		return nil, err
	}
	pubs, err := ParseCertificates(certsPEM)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(pubs[self], func(p ed25519.PublicKey) bool { return p.Equal(priv.Public()) }) {
		return nil, fmt.Errorf("internal certificates: none for %q matches its private key", self)
	}
	if len(pubs[Gateway]) == 0 {
		return nil, fmt.Errorf("internal certificates: none for %q", Gateway)
	}
	k := &Keys{self: self, priv: priv, kid: KeyID(priv.Public().(ed25519.PublicKey)), pubs: pubs, byKID: map[string]issuerKey{}, now: time.Now}
	for issuer, keys := range pubs {
		for _, p := range keys {
			k.byKID[KeyID(p)] = issuerKey{issuer, p}
		}
	}
	k.parser = jwt.NewParser(
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(5*time.Second),
		jwt.WithTimeFunc(func() time.Time { return k.now() }),
	)
	return k, nil
}

// sign issues cl from this service to audience, valid for TTL.
func (k *Keys) sign(cl claims, audience string) (string, error) {
	now := k.now()
	key := signKey(cl, audience, now)
	if s, ok := k.signed.get(key, now); ok {
		return s, nil
	}
	cl.Issuer, cl.Audience = k.self, jwt.ClaimStrings{audience}
	cl.IssuedAt, cl.ExpiresAt = jwt.NewNumericDate(now), jwt.NewNumericDate(now.Add(TTL))
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, cl)
	t.Header["kid"] = k.kid
	s, err := t.SignedString(k.priv)
	if err != nil {
		return "", fmt.Errorf("sign internal token: %w", err)
	}
	k.signed.put(key, s, now.Truncate(time.Second).Add(time.Second))
	return s, nil
}

// SignCaller issues a caller token for c addressed to audience. Only the gateway signs them.
func (k *Keys) SignCaller(c Caller, audience string) (string, error) {
	if k.self != Gateway {
		return "", fmt.Errorf("sign internal token: only the %s names callers, not %s", Gateway, k.self)
	}
	role := c.Role
	if role == "" {
		role = RoleAnonymous
	}
	if !userRoles[role] || (c.UserID == "") != (role == RoleAnonymous) {
		return "", fmt.Errorf("sign internal token: inconsistent user %q and role %q", c.UserID, role)
	}
	return k.sign(claims{Role: role, Status: c.Status, IPHash: c.IPHash, UserAgent: clipUserAgent(c.UserAgent), QuotaLimit: c.QuotaLimit,
		TokenID: c.TokenID, SessionID: c.SessionID, Unverified: c.EmailUnverified, RegisteredClaims: jwt.RegisteredClaims{Subject: c.UserID}}, audience)
}

// clipUserAgent makes ua valid UTF-8 (each invalid run becomes U+FFFD) and cuts it, on a
// character boundary, to at most MaxUserAgent bytes: what a token carries and an audit entry
// keeps.
func clipUserAgent(ua string) string {
	ua = strings.ToValidUTF8(ua, "\uFFFD")
	if len(ua) <= MaxUserAgent {
		return ua
	}
	cut := MaxUserAgent
	for cut > 0 && !utf8.RuneStart(ua[cut]) {
		cut--
	}
	return ua[:cut]
}

// passOn issues a token for audience acting for the caller of received, a token addressed
// to this service.
func (k *Keys) passOn(received, audience string) (string, error) {
	return k.sign(claims{OnBehalfOf: received}, audience)
}

// signService issues a token for audience in which this service acts as itself.
func (k *Keys) signService(audience string) (string, error) { return k.sign(claims{}, audience) }

// Verify checks a token addressed to this service — signature, issuer, audience, expiry,
// lifetime, and the whole chain of services it was passed through — and returns the caller.
func (k *Keys) Verify(token string) (Caller, error) {
	now := k.now()
	if c, ok := k.verified.get(token, now); ok {
		return c, nil
	}
	c, until, err := k.verify(token, k.self, 0)
	if err != nil {
		return Caller{}, fmt.Errorf("verify internal token: %w", err)
	}
	// The token may alias a buffer its server reuses for the next request (fasthttp's
	// headers): the memory keeps its own copy.
	k.verified.put(strings.Clone(token), c, until)
	return c, nil
}

// verify checks token as Verify says and returns its caller and the earliest expiry in its
// chain.
func (k *Keys) verify(token, audience string, depth int) (Caller, time.Time, error) {
	if depth >= maxChain {
		return Caller{}, time.Time{}, errors.New("passed on through too many services")
	}
	var cl claims
	_, err := k.parser.ParseWithClaims(token, &cl, func(t *jwt.Token) (any, error) {
		return k.keyOf(cl.Issuer, t.Header["kid"])
	})
	if err != nil {
		return Caller{}, time.Time{}, err
	}
	if len(cl.Audience) != 1 || cl.Audience[0] != audience {
		return Caller{}, time.Time{}, fmt.Errorf("token addressed to %v, not %s", []string(cl.Audience), audience)
	}
	if !slices.Contains(Calls[cl.Issuer], audience) {
		return Caller{}, time.Time{}, fmt.Errorf("%s does not call %s", cl.Issuer, audience)
	}
	// Whoever signs must not mint long-lived tokens: the lifetime is ours to bound.
	if cl.IssuedAt == nil || cl.ExpiresAt.Sub(cl.IssuedAt.Time) > TTL {
		return Caller{}, time.Time{}, errors.New("lifetime exceeds the limit")
	}
	switch {
	case cl.Issuer == Gateway:
		if cl.OnBehalfOf != "" || !userRoles[cl.Role] || (cl.Subject == "") != (cl.Role == RoleAnonymous) {
			return Caller{}, time.Time{}, errors.New("inconsistent subject and role")
		}
		if len(cl.UserAgent) > MaxUserAgent || !utf8.ValidString(cl.UserAgent) {
			return Caller{}, time.Time{}, errors.New("user agent not as the gateway clips it")
		}
		return Caller{UserID: cl.Subject, Role: cl.Role, Status: cl.Status, IPHash: cl.IPHash, UserAgent: cl.UserAgent,
			QuotaLimit: cl.QuotaLimit, TokenID: cl.TokenID, SessionID: cl.SessionID, EmailUnverified: cl.Unverified}, cl.ExpiresAt.Time, nil
	case cl.namesCaller():
		return Caller{}, time.Time{}, fmt.Errorf("%s cannot name a caller", cl.Issuer)
	case cl.OnBehalfOf != "":
		// What the issuer passes on must have been addressed to it.
		c, until, err := k.verify(cl.OnBehalfOf, cl.Issuer, depth+1)
		return c, minTime(until, cl.ExpiresAt.Time), err
	case depth > 0:
		// A service acts as itself only towards the peer it addressed.
		return Caller{}, time.Time{}, fmt.Errorf("a token of %s acting as itself passed on", cl.Issuer)
	default:
		return Caller{Role: RoleService, Service: cl.Issuer}, cl.ExpiresAt.Time, nil
	}
}

// keyOf is the public key a token of issuer is verified with: the one its kid names. A token
// without a kid (signed by a release before kids) is tried against each of the issuer's keys.
func (k *Keys) keyOf(issuer string, kid any) (any, error) {
	keys := k.pubs[issuer]
	if len(keys) == 0 {
		return nil, fmt.Errorf("unknown issuer %q", issuer)
	}
	if kid == nil {
		set := jwt.VerificationKeySet{}
		for _, p := range keys {
			set.Keys = append(set.Keys, p)
		}
		return set, nil
	}
	id, _ := kid.(string)
	if named, ok := k.byKID[id]; ok && named.issuer == issuer {
		return named.key, nil
	}
	return nil, fmt.Errorf("no key %q of %s in the certificates", id, issuer)
}

// issuerKey is a public key with the service whose certificate carries it.
type issuerKey struct {
	issuer string
	key    ed25519.PublicKey
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// credential is what outgoing internal calls of one request authenticate with.
type credential struct {
	keys *Keys
	// caller is the caller the gateway names (set only on the gateway).
	caller *Caller
	// received is the token this service received, passed on (set only in services).
	received string
}

// tokenFor signs the token of one call to audience.
func (cr credential) tokenFor(audience string) (string, error) {
	switch {
	case cr.caller != nil:
		return cr.keys.SignCaller(*cr.caller, audience)
	case cr.received != "":
		return cr.keys.passOn(cr.received, audience)
	default:
		return cr.keys.signService(audience)
	}
}

type credentialKey struct{}

// WithCaller makes the internal calls made with the returned context act for caller; only the
// gateway's keys can.
func (k *Keys) WithCaller(ctx context.Context, caller Caller) (context.Context, error) {
	if k.self != Gateway {
		return ctx, fmt.Errorf("act for a caller: only the %s names callers, not %s", Gateway, k.self)
	}
	return context.WithValue(ctx, credentialKey{}, credential{keys: k, caller: &caller}), nil
}

// AsService makes the internal calls made with the returned context act as this service
// itself, with no caller: for work no request asked for.
func (k *Keys) AsService(ctx context.Context) context.Context {
	return context.WithValue(ctx, credentialKey{}, credential{keys: k})
}

// Received makes the internal calls made with the returned context act for the caller of
// received, a token this service was called with (Require does it for every request).
func (k *Keys) Received(ctx context.Context, received string) context.Context {
	return context.WithValue(ctx, credentialKey{}, credential{keys: k, received: received})
}

// TokenFor returns the token an internal call to service audience made with ctx carries,
// or "" when ctx acts for no one (such a call is refused by every internal route).
func TokenFor(ctx context.Context, audience string) (string, error) {
	cr, ok := ctx.Value(credentialKey{}).(credential)
	if !ok {
		return "", nil
	}
	return cr.tokenFor(audience)
}
