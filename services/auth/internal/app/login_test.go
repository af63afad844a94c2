package app_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

func TestLoginOutcomes(t *testing.T) {
	s := boot(t)
	ada := register(t, s, "ada@example.com")
	ctx := s.anon(t)
	login := func(email, pw string) (auth.Session, error) {
		return s.client.Login(ctx, auth.LoginRequest{Email: email, Password: pw})
	}
	sess, err := login("ADA@example.com", "correct-horse")
	if err != nil || sess.User.ID != ada.User.ID || sess.Token == ada.Token || sess.User.LastLoginAt == nil {
		t.Fatalf("login = %+v, %v; want a fresh session", sess, err)
	}
	_, err = login("ada@example.com", "wrong-horse")
	wantErr(t, err, errs.KindUnauthenticated, "invalid email or password")
	_, err = login("nobody@example.com", "correct-horse")
	wantErr(t, err, errs.KindUnauthenticated, "invalid email or password")

	s.setUser(t, ada.User.ID, bson.D{{Key: "status", Value: "banned"}, {Key: "ban_reason", Value: "spam"}})
	_, err = login("ada@example.com", "correct-horse")
	wantErr(t, err, errs.KindForbidden, "account is banned")

	bob := register(t, s, "bob@example.com")
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	s.setUser(t, bob.User.ID, bson.D{{Key: "timeout_until", Value: until}})
	_, err = s.client.Login(s.as(t, identity.Caller{IPHash: strings.Repeat("b", 64)}), auth.LoginRequest{Email: "bob@example.com", Password: "correct-horse"})
	wantErr(t, err, errs.KindForbidden, "account is suspended until "+until.Format(time.RFC3339))

	resp, body := s.call(t, ctx, http.MethodPost, "/internal/auth/login", `{"email":"ada@example.com"}`)
	wantFailure(t, resp, body, 400, "password is required")
}

// After the configured number of failures the next attempt is 429 with Retry-After, even
// with the right password; only failures counted, so successes before did not use it up.
// The windows are the pair's (e-mail, client) and the e-mail's: the client itself is not
// held back for another e-mail.
func TestLoginRateLimit(t *testing.T) {
	s := boot(t)
	register(t, s, "ada@example.com")
	ctx := s.anon(t)
	for range 5 { // successes give their units back
		if _, err := s.client.Login(ctx, auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		_, err := s.client.Login(ctx, auth.LoginRequest{Email: "ada@example.com", Password: "wrong-horse"})
		wantErr(t, err, errs.KindUnauthenticated, "invalid email or password")
	}
	resp, body := s.call(t, ctx, http.MethodPost, "/internal/auth/login", `{"email":"ada@example.com","password":"correct-horse"}`)
	wantFailure(t, resp, body, 429, "too many failed login attempts")
	if resp.Header.Get("Retry-After") != "840" {
		t.Fatalf("Retry-After = %q, want 840", resp.Header.Get("Retry-After"))
	}
	pair := sha256Hex(sha256Hex("ada@example.com") + clientIP)
	if n, m := s.quota.Used(quota.ScopeLoginEmailClient, pair), s.quota.Used(quota.ScopeLoginEmail, sha256Hex("ada@example.com")); n != 3 || m != 3 {
		t.Fatalf("%d pair and %d e-mail units counted, want 3 and 3", n, m)
	}
	// This client logs in to another account as before.
	register(t, s, "bob@example.com")
	if _, err := s.client.Login(ctx, auth.LoginRequest{Email: "bob@example.com", Password: "correct-horse"}); err != nil {
		t.Fatalf("the same client with another e-mail: %v", err)
	}
	// Until the client's own window over all e-mails is full.
	s.quota.SetLimit(quota.ScopeLoginClient, 3)
	_, err := s.client.Login(ctx, auth.LoginRequest{Email: "bob@example.com", Password: "correct-horse"})
	wantErr(t, err, errs.KindTooMany, "too many failed login attempts")
	for _, k := range s.quota.Seen() {
		if strings.Contains(k, "@") || len(k) != 64 {
			t.Fatalf("the quota service saw a key that is not a 64-character hash: %q", k)
		}
	}
}

func TestLoginFailsClosedWithoutQuota(t *testing.T) {
	s := boot(t)
	register(t, s, "ada@example.com")
	s.quota.Close()
	resp, body := s.call(t, s.anon(t), http.MethodPost, "/internal/auth/login", `{"email":"ada@example.com","password":"correct-horse"}`)
	wantFailure(t, resp, body, 503, "quota service unavailable")
}

// An unknown e-mail costs a full password verification, like a wrong password.
func TestUnknownEmailTakesAsLongAsWrongPassword(t *testing.T) {
	s := boot(t)
	register(t, s, "ada@example.com")
	median := func(email string) time.Duration {
		var ds []time.Duration
		for i := range 7 {
			// A fresh client identity per attempt keeps the windows out of the way.
			ctx := s.as(t, identity.Caller{IPHash: strings.Repeat(string("0123456789abcdef"[i]), 64)})
			start := time.Now()
			_, err := s.client.Login(ctx, auth.LoginRequest{Email: email, Password: "wrong-horse"})
			ds = append(ds, time.Since(start))
			wantErr(t, err, errs.KindUnauthenticated, "invalid email or password")
			s.quota.Reset()
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	wrong, unknown := median("ada@example.com"), median("nobody@example.com")
	t.Logf("median wrong password %v, unknown e-mail %v", wrong, unknown)
	// A generous margin: without the dummy verification an unknown e-mail answers ~20× faster.
	if unknown < wrong/4 {
		t.Fatalf("unknown e-mail answers in %v, wrong password in %v: the timing tells them apart", unknown, wrong)
	}
}
