package app_test

import (
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp/idptest"
)

// Identity provider logins have the client's failed-login window of their own: a client
// sending forged tokens (each with an unknown kid makes the verifier fetch the keys again) is
// stopped with 429 before the token is looked at. Successes give their unit back.
func TestGoogleRateLimit(t *testing.T) {
	iss := idptest.New(t)
	s := boot(t, withIssuer(iss, ""))
	ctx := s.anon(t)
	for i := range 5 {
		if _, err := s.client.Google(ctx, auth.GoogleRequest{IDToken: iss.Sign(t, iss.Claims("sub-grace", "grace@example.com"))}); err != nil {
			t.Fatalf("success %d: %v", i, err)
		}
	}
	if n := s.quota.Used(quota.ScopeLoginIP, clientIP); n != 0 {
		t.Fatalf("%d units counted after successes only", n)
	}
	forger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	forged := func(i int) string {
		return `{"id_token":"` + idptest.SignWith(t, forger, fmt.Sprintf("unknown-kid-%d", i), iss.Claims("sub-grace", "grace@example.com")) + `"}`
	}
	for i := range 3 { // the fake quota service allows 3 failures per window
		resp, body := s.call(t, ctx, http.MethodPost, "/internal/auth/google", forged(i))
		wantFailure(t, resp, body, 401, "invalid identity token")
	}
	keyFetches := iss.Hits("/keys")
	for i := 3; i < 8; i++ {
		resp, body := s.call(t, ctx, http.MethodPost, "/internal/auth/google", forged(i))
		wantFailure(t, resp, body, 429, "too many failed login attempts")
		if resp.Header.Get("Retry-After") != "840" {
			t.Fatalf("Retry-After = %q, want 840", resp.Header.Get("Retry-After"))
		}
	}
	if n := iss.Hits("/keys"); n != keyFetches {
		t.Fatalf("refused attempts fetched the keys %d more times", n-keyFetches)
	}
	// The window is the client's, for a valid token too, but not for password logins, which
	// count per e-mail and client; another client is not affected.
	_, err = s.client.Google(ctx, auth.GoogleRequest{IDToken: iss.Sign(t, iss.Claims("sub-grace", "grace@example.com"))})
	wantErr(t, err, errs.KindTooMany, "too many failed login attempts")
	register(t, s, "bob@example.com")
	if _, err = s.client.Login(ctx, auth.LoginRequest{Email: "bob@example.com", Password: "correct-horse"}); err != nil {
		t.Fatalf("a password login from the client whose ID-token window is full: %v", err)
	}
	if _, err := s.client.Google(s.from(t, 1), auth.GoogleRequest{IDToken: iss.Sign(t, iss.Claims("sub-grace", "grace@example.com"))}); err != nil {
		t.Fatalf("another client: %v", err)
	}
	n, _ := s.db.Collection("login_records").CountDocuments(t.Context(), bson.D{{Key: "method", Value: "google"}, {Key: "reason", Value: "rate_limited"}})
	if n != 6 {
		t.Fatalf("%d rate-limited google records, want 6", n)
	}
	// Without the quota service the answer is 503, not an unlimited login.
	s.quota.Close()
	resp, body := s.call(t, s.from(t, 2), http.MethodPost, "/internal/auth/google", forged(99))
	wantFailure(t, resp, body, 503, "quota service unavailable")
}
