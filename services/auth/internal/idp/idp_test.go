package idp_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp/idptest"
)

const discovery = "/.well-known/openid-configuration"

func TestVerifyChecksTheToken(t *testing.T) {
	iss := idptest.New(t)
	v := idp.New(idp.Config{Issuer: iss.URL, ClientID: idptest.ClientID})
	ctx := context.Background()
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	with := func(k string, val any) string {
		c := iss.Claims("sub-1", "grace@example.com")
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return iss.Sign(t, c)
	}
	valid := iss.Sign(t, iss.Claims("sub-1", "Grace@Example.com"))
	id, err := v.Verify(ctx, valid)
	if err != nil {
		t.Fatal(err)
	}
	want := idp.Identity{Subject: "sub-1", Email: "Grace@Example.com", EmailVerified: true,
		GivenName: "Grace", FamilyName: "Hopper", Name: "Grace Hopper"}
	if id != want {
		t.Fatalf("identity = %+v, want %+v", id, want)
	}

	invalid := map[string]string{
		"wrong audience":   with("aud", "someone-else"),
		"wrong issuer":     with("iss", "https://accounts.example.invalid"),
		"expired":          with("exp", time.Now().Add(-time.Minute).Unix()),
		"no expiry":        with("exp", nil),
		"not yet valid":    with("nbf", time.Now().Add(time.Hour).Unix()),
		"bad signature":    idptest.SignWith(t, otherKey, iss.KeyID, iss.Claims("sub-1", "grace@example.com")),
		"unknown key":      idptest.SignWith(t, otherKey, "other-kid", iss.Claims("sub-1", "grace@example.com")),
		"tampered payload": valid[:len(valid)/2] + "A" + valid[len(valid)/2+1:],
		"garbage":          "a.b.c",
		"empty":            "",
	}
	for name, tok := range invalid {
		t.Run(name, func(t *testing.T) {
			if _, err := v.Verify(ctx, tok); !errors.Is(err, idp.ErrInvalidToken) {
				t.Fatalf("Verify = %v; want ErrInvalidToken", err)
			}
		})
	}
}

func TestEmailVerifiedClaim(t *testing.T) {
	iss := idptest.New(t)
	v := idp.New(idp.Config{Issuer: iss.URL, ClientID: idptest.ClientID})
	for _, tc := range []struct {
		value any
		want  bool
	}{{true, true}, {"true", true}, {false, false}, {"false", false}, {nil, false}, {1, false}, {"yes", false}} {
		c := iss.Claims("s", "a@example.com")
		c["email_verified"] = tc.value
		if tc.value == nil {
			delete(c, "email_verified")
		}
		id, err := v.Verify(context.Background(), iss.Sign(t, c))
		if err != nil || id.EmailVerified != tc.want {
			t.Errorf("email_verified %#v: got %v, %v; want %v", tc.value, id.EmailVerified, err, tc.want)
		}
	}
}

// Discovery runs once, lazily; a failed one is retried by a later call, not at every call.
func TestDiscoveryIsLazyAndRetried(t *testing.T) {
	iss := idptest.New(t)
	iss.FailDiscovery(1)
	v := idp.New(idp.Config{Issuer: iss.URL, ClientID: idptest.ClientID, RetryAfter: 200 * time.Millisecond})
	if n := iss.Hits(discovery); n != 0 {
		t.Fatalf("discovery ran %d times before the first token", n)
	}
	tok := iss.Sign(t, iss.Claims("s", "a@example.com"))
	ctx := context.Background()
	if _, err := v.Verify(ctx, tok); !errors.Is(err, idp.ErrUnavailable) {
		t.Fatalf("first Verify = %v; want ErrUnavailable", err)
	}
	// Within RetryAfter the issuer is not asked again.
	if _, err := v.Verify(ctx, tok); !errors.Is(err, idp.ErrUnavailable) || iss.Hits(discovery) != 1 {
		t.Fatalf("second Verify = %v after %d discoveries; want a fast ErrUnavailable", err, iss.Hits(discovery))
	}
	time.Sleep(250 * time.Millisecond)
	for range 3 {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatalf("Verify after recovery: %v", err)
		}
	}
	if n := iss.Hits(discovery); n != 2 {
		t.Fatalf("discovery ran %d times, want 2 (one failure, one success)", n)
	}
	if n := iss.Hits("/keys"); n != 1 {
		t.Fatalf("keys fetched %d times, want once (cached)", n)
	}
}

// An unreachable issuer costs at most the timeout.
func TestDiscoveryIsBounded(t *testing.T) {
	iss := idptest.New(t)
	iss.DelayDiscovery(time.Minute)
	v := idp.New(idp.Config{Issuer: iss.URL, ClientID: idptest.ClientID, Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := v.Verify(context.Background(), "x.y.z")
	if !errors.Is(err, idp.ErrUnavailable) || time.Since(start) > 2*time.Second {
		t.Fatalf("Verify = %v after %v; want ErrUnavailable quickly", err, time.Since(start))
	}
}

// With a JWKS URL the verifier never asks for discovery.
func TestJWKSURLSkipsDiscovery(t *testing.T) {
	iss := idptest.New(t)
	iss.DisableDiscovery()
	issuer := iss.URL + "/tenant"
	v := idp.New(idp.Config{Issuer: issuer, ClientID: idptest.ClientID, JWKSURL: iss.JWKSURL()})
	c := iss.Claims("s", "a@example.com")
	c["iss"] = issuer
	if _, err := v.Verify(context.Background(), iss.Sign(t, c)); err != nil {
		t.Fatalf("Verify via JWKS URL: %v", err)
	}
	c["iss"] = iss.URL
	if _, err := v.Verify(context.Background(), iss.Sign(t, c)); !errors.Is(err, idp.ErrInvalidToken) {
		t.Fatalf("wrong issuer via JWKS URL = %v; want ErrInvalidToken", err)
	}
	if iss.Hits(discovery)+iss.Hits("/tenant"+discovery) != 0 {
		t.Fatal("discovery was requested although a JWKS URL is set")
	}
}

func TestUnconfigured(t *testing.T) {
	v := idp.New(idp.Config{})
	if v.Enabled() {
		t.Fatal("enabled without an issuer")
	}
	if _, err := v.Verify(context.Background(), "x.y.z"); !errors.Is(err, idp.ErrNotConfigured) {
		t.Fatalf("Verify = %v; want ErrNotConfigured", err)
	}
}

type requestKey struct{}

// spyTransport notes, per path, the requestKey value of each request's context.
type spyTransport struct {
	mu   sync.Mutex
	seen map[string][]any
}

func (s *spyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.seen[req.URL.Path] = append(s.seen[req.URL.Path], req.Context().Value(requestKey{}))
	s.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (s *spyTransport) values(path string) []any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]any(nil), s.seen[path]...)
}

// Key downloads happen for the life of the process, so they must not run in (and keep
// alive) the context of the request that happened to come first: not its values, such as
// its trace span, and not its cancellation.
func TestKeyFetchesDoNotKeepTheFirstRequestsContext(t *testing.T) {
	for _, withJWKSURL := range []bool{false, true} {
		t.Run(fmt.Sprintf("jwks url %v", withJWKSURL), func(t *testing.T) {
			iss := idptest.New(t)
			spy := &spyTransport{seen: map[string][]any{}}
			cfg := idp.Config{Issuer: iss.URL, ClientID: idptest.ClientID, Transport: spy}
			if withJWKSURL {
				cfg.JWKSURL = iss.JWKSURL()
			}
			v := idp.New(cfg)
			first, cancel := context.WithCancel(context.WithValue(context.Background(), requestKey{}, "first request"))
			if _, err := v.Verify(first, iss.Sign(t, iss.Claims("s", "a@example.com"))); err != nil {
				t.Fatal(err)
			}
			cancel() // the first request is over
			// An unknown kid makes the verifier fetch the keys again.
			otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				t.Fatal(err)
			}
			later := context.WithValue(context.Background(), requestKey{}, "later request")
			if _, err := v.Verify(later, idptest.SignWith(t, otherKey, "rotated-kid", iss.Claims("s", "a@example.com"))); !errors.Is(err, idp.ErrInvalidToken) {
				t.Fatalf("unknown kid = %v; want ErrInvalidToken", err)
			}
			if _, err := v.Verify(later, iss.Sign(t, iss.Claims("s", "a@example.com"))); err != nil {
				t.Fatalf("Verify after the first request was cancelled: %v", err)
			}
			keys := spy.values("/keys")
			if len(keys) < 2 {
				t.Fatalf("keys fetched %d times; want the first fetch and the refetch", len(keys))
			}
			for i, val := range keys {
				if val != nil {
					t.Fatalf("key fetch %d ran in a request's context (%v)", i, val)
				}
			}
			// Discovery is part of the first request and rightly runs in its context: the
			// spy does see values.
			if d := spy.values(discovery); !withJWKSURL && (len(d) != 1 || d[0] != "first request") {
				t.Fatalf("discovery contexts = %v", d)
			}
		})
	}
}
