package app_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/services/auth/internal/config"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp/idptest"
)

func withIssuer(iss *idptest.Issuer, jwksURL string) func(*config.Config) {
	return func(c *config.Config) {
		c.OIDCIssuer, c.OIDCClientID, c.OIDCJWKSURL = iss.URL, idptest.ClientID, jwksURL
	}
}

func (s *service) google(t *testing.T, token string) (auth.Session, error) {
	t.Helper()
	return s.client.Google(s.anon(t), auth.GoogleRequest{IDToken: token})
}

// from returns the context of an anonymous caller with its own identity key n, so its
// failed-login window is its own.
func (s *service) from(t *testing.T, n int) context.Context {
	t.Helper()
	return s.as(t, identity.Caller{IPHash: fmt.Sprintf("%064x", n+1)})
}

func TestGoogleFirstAndSecondLogin(t *testing.T) {
	iss := idptest.New(t)
	s := boot(t, withIssuer(iss, ""))
	first, err := s.google(t, iss.Sign(t, iss.Claims("sub-grace", "Grace@Example.com")))
	if err != nil {
		t.Fatal(err)
	}
	u := first.User
	if u.Email != "grace@example.com" || u.AuthProvider != "google" || u.FirstName != "Grace" || u.LastName != "Hopper" ||
		u.Role != "user" || u.Status != "active" || u.QuotaLimit != 100 || u.LastLoginAt == nil {
		t.Fatalf("created user = %+v", u)
	}
	doc := s.userDoc(t, bson.D{{Key: "_id", Value: u.ID}})
	if doc["idp_uid"] != "sub-grace" || doc["password_hash"] != nil {
		t.Fatalf("stored user = %v", doc)
	}
	if v, err := userOf(s.client.Validate(s.anon(t), first.Token)); err != nil || v.ID != u.ID {
		t.Fatalf("validate the google session = %+v, %v", v, err)
	}
	// The same subject logs in again, even with a changed e-mail: found by idp_uid.
	second, err := s.google(t, iss.Sign(t, iss.Claims("sub-grace", "grace.hopper@example.com")))
	if err != nil || second.User.ID != u.ID || second.Token == first.Token {
		t.Fatalf("second login = %+v, %v", second, err)
	}
	n, _ := s.db.Collection("users").CountDocuments(t.Context(), bson.D{})
	if n != 1 {
		t.Fatalf("%d accounts after two logins of one subject", n)
	}
	// No password exists, so a password login answers like a wrong password.
	_, err = s.client.Login(s.anon(t), auth.LoginRequest{Email: "grace@example.com", Password: "anything-1"})
	wantErr(t, err, errs.KindUnauthenticated, "invalid email or password")

	recs, _ := s.db.Collection("login_records").CountDocuments(t.Context(), bson.D{{Key: "method", Value: "google"}, {Key: "success", Value: true}, {Key: "user_id", Value: u.ID}})
	if recs != 2 {
		t.Fatalf("%d successful google login records, want 2", recs)
	}
	if hits := iss.Hits("/.well-known/openid-configuration"); hits != 1 {
		t.Fatalf("discovery ran %d times for two logins, want once", hits)
	}
}

func TestGoogleRejectsBadTokens(t *testing.T) {
	iss := idptest.New(t)
	s := boot(t, withIssuer(iss, ""))
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	with := func(k string, v any) string {
		c := iss.Claims("sub-x", "x@example.com")
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return iss.Sign(t, c)
	}
	cases := map[string]string{
		"wrong audience":       with("aud", "another-client"),
		"wrong issuer":         with("iss", "https://accounts.example.invalid"),
		"expired":              with("exp", time.Now().Add(-time.Minute).Unix()),
		"bad signature":        idptest.SignWith(t, otherKey, iss.KeyID, iss.Claims("sub-x", "x@example.com")),
		"email not verified":   with("email_verified", false),
		"email_verified gone":  with("email_verified", nil),
		"no email":             with("email", nil),
		"email not an address": with("email", "not-an-address"),
		"no subject":           with("sub", nil),
		"garbage":              "not-a-jwt",
	}
	client := 0
	for name, tok := range cases {
		client++ // each from its own client: the failures would fill one client's window
		t.Run(name, func(t *testing.T) {
			resp, body := s.call(t, s.from(t, client), http.MethodPost, "/internal/auth/google", `{"id_token":"`+tok+`"}`)
			wantFailure(t, resp, body, 401, "invalid identity token")
		})
	}
	n, _ := s.db.Collection("users").CountDocuments(t.Context(), bson.D{})
	recs, _ := s.db.Collection("login_records").CountDocuments(t.Context(), bson.D{{Key: "method", Value: "google"}, {Key: "success", Value: false}})
	if n != 0 || recs != int64(len(cases)) {
		t.Fatalf("%d accounts and %d failed google records after %d bad tokens", n, recs, len(cases))
	}
	var rec bson.M
	_ = s.db.Collection("login_records").FindOne(t.Context(), bson.D{{Key: "reason", Value: "email_not_verified"}}).Decode(&rec)
	if rec["email"] != "x@example.com" {
		t.Fatalf("the unverified attempt's record = %v", rec)
	}
	resp, body := s.call(t, s.anon(t), http.MethodPost, "/internal/auth/google", `{"id_token":""}`)
	wantFailure(t, resp, body, 400, "id_token is required")
}

// Registration never verifies an e-mail, so the password account a verified provider
// e-mail finds may be someone else's: registered first to wait for its owner. Linking hands
// it to the provider's user: auth_provider google, no password, every older session ended.
func TestGoogleLinkTakesOverAPreRegisteredAccount(t *testing.T) {
	iss := idptest.New(t)
	s := boot(t, withIssuer(iss, ""))
	squatter := register(t, s, "ada@example.com")
	again, err := s.client.Login(s.anon(t), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := s.google(t, iss.Sign(t, iss.Claims("sub-ada", "ADA@example.com")))
	if err != nil || owner.User.ID != squatter.User.ID || owner.User.AuthProvider != "google" || owner.User.FirstName != "Ada" {
		t.Fatalf("google login of an existing e-mail = %+v, %v", owner, err)
	}
	for _, tok := range []string{squatter.Token, again.Token} {
		resp, body := s.call(t, s.anon(t), http.MethodPost, "/internal/auth/sessions/validate", `{"token":"`+tok+`"}`)
		wantFailure(t, resp, body, 401, "session expired or invalid")
	}
	// The password is gone: the same answer as a wrong one.
	resp, body := s.call(t, s.from(t, 1), http.MethodPost, "/internal/auth/login", `{"email":"ada@example.com","password":"correct-horse"}`)
	wantFailure(t, resp, body, 401, "invalid email or password")
	if u, err := userOf(s.client.Validate(s.anon(t), owner.Token)); err != nil || u.AuthProvider != "google" || u.ID != owner.User.ID {
		t.Fatalf("the owner's session = %+v, %v", u, err)
	}
	doc := s.userDoc(t, bson.D{{Key: "_id", Value: owner.User.ID}})
	if doc["idp_uid"] != "sub-ada" || doc["auth_provider"] != "google" || doc["password_hash"] != nil {
		t.Fatalf("stored account after linking = %v", doc)
	}
	var rec bson.M
	if err := s.db.Collection("login_records").FindOne(t.Context(), bson.D{{Key: "method", Value: "google"}, {Key: "user_id", Value: owner.User.ID}}).Decode(&rec); err != nil ||
		rec["success"] != true || rec["reason"] != "linked" {
		t.Fatalf("the linking login's record = %v, %v", rec, err)
	}
	// A later login of the subject is a plain one and ends nothing.
	later, err := s.google(t, iss.Sign(t, iss.Claims("sub-ada", "ada@example.com")))
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{owner.Token, later.Token} {
		if _, err := s.client.Validate(s.anon(t), tok); err != nil {
			t.Fatalf("a plain google login ended a session: %v", err)
		}
	}
	// Another subject with the same e-mail does not take the account over.
	_, err = s.google(t, iss.Sign(t, iss.Claims("sub-mallory", "ada@example.com")))
	wantErr(t, err, errs.KindConflict, "email is linked to another identity provider account")
	// A ban counts for identity provider logins too.
	s.setUser(t, owner.User.ID, bson.D{{Key: "status", Value: "banned"}})
	_, err = s.client.Google(s.from(t, 2), auth.GoogleRequest{IDToken: iss.Sign(t, iss.Claims("sub-ada", "ada@example.com"))})
	wantErr(t, err, errs.KindForbidden, "account is banned")
	s.setUser(t, owner.User.ID, bson.D{{Key: "status", Value: "active"}, {Key: "timeout_until", Value: time.Now().Add(time.Hour)}})
	_, err = s.client.Google(s.from(t, 3), auth.GoogleRequest{IDToken: iss.Sign(t, iss.Claims("sub-ada", "ada@example.com"))})
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindForbidden {
		t.Fatalf("suspended google login = %v; want 403", err)
	}
}

func TestGoogleNamesFallBack(t *testing.T) {
	iss := idptest.New(t)
	s := boot(t, withIssuer(iss, ""))
	c := iss.Claims("sub-1", "linus@example.com")
	delete(c, "given_name")
	delete(c, "family_name")
	c["name"] = "Linus Benedict Torvalds"
	if sess, err := s.google(t, iss.Sign(t, c)); err != nil || sess.User.FirstName != "Linus" || sess.User.LastName != "Benedict Torvalds" {
		t.Fatalf("names from name = %+v, %v", sess.User, err)
	}
	c = iss.Claims("sub-2", "margaret.h@example.com")
	delete(c, "given_name")
	delete(c, "family_name")
	delete(c, "name")
	if sess, err := s.google(t, iss.Sign(t, c)); err != nil || sess.User.FirstName != "margaret.h" || sess.User.LastName != "margaret.h" {
		t.Fatalf("names from the e-mail = %+v, %v", sess.User, err)
	}
}

// With LINKMESH_OIDC_JWKS_URL the keys come from there and discovery is never asked for.
func TestGoogleWithJWKSURL(t *testing.T) {
	iss := idptest.New(t)
	iss.DisableDiscovery()
	s := boot(t, withIssuer(iss, iss.JWKSURL()))
	if _, err := s.google(t, iss.Sign(t, iss.Claims("sub-1", "a@example.com"))); err != nil {
		t.Fatalf("google login via the JWKS URL: %v", err)
	}
	if iss.Hits("/.well-known/openid-configuration") != 0 || iss.Hits("/keys") != 1 {
		t.Fatalf("discovery %d, keys %d; want 0 and 1", iss.Hits("/.well-known/openid-configuration"), iss.Hits("/keys"))
	}
}

// An issuer that is down at start does not stop the service; logins answer 503 and work once
// it is back.
func TestGoogleIssuerDownAtStart(t *testing.T) {
	iss := idptest.New(t)
	iss.FailDiscovery(1)
	s := boot(t, withIssuer(iss, ""))
	tok := iss.Sign(t, iss.Claims("sub-1", "a@example.com"))
	resp, body := s.call(t, s.anon(t), http.MethodPost, "/internal/auth/google", `{"id_token":"`+tok+`"}`)
	wantFailure(t, resp, body, 503, "identity provider unavailable")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := s.google(t, tok)
		if err == nil {
			break
		}
		if !errs.IsKind(err, errs.KindUnavailable) || time.Now().After(deadline) {
			t.Fatalf("google login after the issuer came back: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func TestIDPConfigConfigured(t *testing.T) {
	iss := idptest.New(t)
	s := boot(t, withIssuer(iss, ""))
	cfg, err := s.client.IDPConfig(s.anon(t))
	if err != nil || cfg != (auth.IDPConfig{Enabled: true, Provider: "google", ClientID: idptest.ClientID, Issuer: iss.URL}) {
		t.Fatalf("idp-config = %+v, %v", cfg, err)
	}
	if iss.Hits("/.well-known/openid-configuration") != 0 {
		t.Fatal("start-up or idp-config ran discovery; it must wait for the first token")
	}
}
