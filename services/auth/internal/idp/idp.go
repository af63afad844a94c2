// Package idp verifies ID tokens of an external OpenID Connect identity provider (Google, or
// any issuer with discovery) with go-oidc: signature against the provider's JWKS, issuer,
// audience = our client id, and expiry.
package idp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Errors of Verify besides an invalid token.
var (
	// ErrNotConfigured: no issuer is configured.
	ErrNotConfigured = errors.New("identity provider not configured")
	// ErrUnavailable: discovery of the issuer or a download of its keys failed (refused,
	// timed out, not a 200, or over MaxDocumentSize); the next call tries again.
	ErrUnavailable = errors.New("identity provider unavailable")
	// ErrInvalidToken wraps every reason a token is refused.
	ErrInvalidToken = errors.New("invalid identity token")
)

// Config configures a Verifier.
type Config struct {
	Issuer   string
	ClientID string
	// JWKSURL, when set, is used directly and discovery is skipped.
	JWKSURL string
	// Timeout bounds discovery and each key download, reading the answer included
	// (default 5s).
	Timeout time.Duration
	// RetryAfter is how long a failed discovery is remembered before the next try, so an
	// unreachable issuer is not asked once per login (default 5s).
	RetryAfter time.Duration
	// Now is the clock of the expiry check; time.Now when nil.
	Now func() time.Time
	// Transport carries the requests to the provider; http.DefaultTransport when nil.
	Transport http.RoundTripper
}

// Identity is what a verified token says about its subject.
type Identity struct {
	Subject       string
	Email         string
	EmailVerified bool
	GivenName     string
	FamilyName    string
	Name          string
}

// Verifier verifies ID tokens. Discovery happens lazily on first use, not at start-up, so an
// unreachable issuer never keeps the service from starting.
type Verifier struct {
	cfg    Config
	client *http.Client

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	failedAt time.Time
}

// New returns a Verifier; with an empty issuer it refuses every token with ErrNotConfigured.
func New(cfg Config) *Verifier {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.RetryAfter < 0 {
		cfg.RetryAfter = 0
	} else if cfg.RetryAfter == 0 {
		cfg.RetryAfter = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	transport := cfg.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	// go-oidc fetches keys with the client found in its context and ignores cancellation,
	// so the client's own timeout is what bounds a key download; the transport bounds what
	// is read of the answer.
	return &Verifier{cfg: cfg, client: &http.Client{Timeout: cfg.Timeout,
		Transport: boundedTransport{next: transport, max: MaxDocumentSize}}}
}

// Enabled reports whether an issuer is configured.
func (v *Verifier) Enabled() bool { return v.cfg.Issuer != "" && v.cfg.ClientID != "" }

// Verify checks raw and returns its identity. Claims other than signature, issuer, audience
// and expiry (such as email_verified) are the caller's to judge.
func (v *Verifier) Verify(ctx context.Context, raw string) (Identity, error) {
	if !v.Enabled() {
		return Identity{}, ErrNotConfigured
	}
	verifier, err := v.get(ctx)
	if err != nil {
		return Identity{}, err
	}
	var keysErr error
	tok, err := verifier.Verify(context.WithValue(oidc.ClientContext(ctx, v.client), keysFailure{}, &keysErr), raw)
	switch {
	case keysErr != nil:
		return Identity{}, fmt.Errorf("%w: download keys: %w", ErrUnavailable, keysErr)
	case err != nil:
		return Identity{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified any    `json:"email_verified"`
		GivenName     string `json:"given_name"`
		FamilyName    string `json:"family_name"`
		Name          string `json:"name"`
	}
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: decode claims: %w", ErrInvalidToken, err)
	}
	return Identity{Subject: tok.Subject, Email: claims.Email, EmailVerified: verified(claims.EmailVerified),
		GivenName: claims.GivenName, FamilyName: claims.FamilyName, Name: claims.Name}, nil
}

// verified accepts JSON true, and the string "true" that some providers (Cognito) send.
func verified(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case string:
		return b == "true"
	}
	return false
}

// get returns the verifier, discovering the issuer the first time. A failure is not cached
// for good: after RetryAfter the next call tries again.
func (v *Verifier) get(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.verifier != nil {
		return v.verifier, nil
	}
	now := time.Now()
	if !v.failedAt.IsZero() && now.Sub(v.failedAt) < v.cfg.RetryAfter {
		return nil, ErrUnavailable
	}
	// The key set keeps its context for the life of the process and fetches keys with it,
	// for every later request. Derived from this request's, it would keep that request's
	// values alive for good (its trace span would parent every key fetch); so it is a fresh
	// context that carries only the HTTP client.
	keyCtx := oidc.ClientContext(context.Background(), v.client)
	conf := oidc.Config{ClientID: v.cfg.ClientID, Now: v.cfg.Now}
	if v.cfg.JWKSURL != "" {
		v.verifier = newVerifier(keyCtx, v.cfg.Issuer, v.cfg.JWKSURL, nil, conf)
		return v.verifier, nil
	}
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, v.client), v.cfg.Timeout)
	defer cancel()
	provider, err := oidc.NewProvider(dctx, v.cfg.Issuer)
	if err != nil {
		v.failedAt = now
		return nil, fmt.Errorf("%w: discover %s: %w", ErrUnavailable, v.cfg.Issuer, err)
	}
	var meta struct {
		JWKSURL string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := provider.Claims(&meta); err != nil || meta.JWKSURL == "" {
		v.failedAt = now
		return nil, fmt.Errorf("%w: discover %s: no jwks_uri", ErrUnavailable, v.cfg.Issuer)
	}
	v.verifier = newVerifier(keyCtx, v.cfg.Issuer, meta.JWKSURL, meta.Algs, conf)
	return v.verifier, nil
}
