package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

func wantErr(t *testing.T, err error, kind errs.Kind, msg string) {
	t.Helper()
	if e, ok := errs.As(err); !ok || e.Kind != kind || e.Message != msg {
		t.Fatalf("got %v, want %d %q", err, kind.Status(), msg)
	}
}

func TestRegisterThenSession(t *testing.T) {
	s := boot(t)
	resp, body := s.call(t, s.anon(t), http.MethodPost, "/internal/auth/register",
		`{"email":"  Ada@Example.COM ","password":"correct-horse","first_name":" Ada ","last_name":"Lovelace","extra":1}`)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("register = %d %s", resp.StatusCode, body)
	}
	var sess auth.Session
	if err := json.Unmarshal([]byte(body), &sess); err != nil {
		t.Fatal(err)
	}
	u := sess.User
	if u.Email != "ada@example.com" || u.FirstName != "Ada" || u.Role != "user" || u.Status != "active" ||
		u.AuthProvider != "email" || u.QuotaLimit != 100 || !u.CreatedAt.Equal(u.UpdatedAt) || len(sess.Token) != 43 ||
		sess.ExpiresAt.Sub(u.CreatedAt) != time.Hour {
		t.Fatalf("session = %+v", sess)
	}
	for _, leak := range []string{"password", "idp_uid", "$argon2id"} {
		if strings.Contains(body, leak) {
			t.Fatalf("the response carries %q: %s", leak, body)
		}
	}
	got, err := userOf(s.client.Validate(s.anon(t), sess.Token))
	if err != nil || got.ID != u.ID {
		t.Fatalf("validate the new session = %+v, %v", got, err)
	}
	if u.EmailVerified {
		t.Fatal("a new password account is verified")
	}
	// Registering the same verified e-mail, in any case, is a conflict.
	s.setUser(t, u.ID, bson.D{{Key: "email_unverified", Value: false}})
	_, err = s.client.Register(s.anon(t), auth.RegisterRequest{Email: "ADA@example.com", Password: "other-horse", FirstName: "A", LastName: "B"})
	wantErr(t, err, errs.KindConflict, "email is already registered")
	doc := s.userDoc(t, bson.D{{Key: "email", Value: "ada@example.com"}})
	if h, _ := doc["password_hash"].(string); !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("stored password hash %q is not OWASP argon2id", h)
	}
}

func TestRegisterValidation(t *testing.T) {
	s := boot(t)
	cases := []struct{ body, msg string }{
		{`{"email":"nope","password":"correct-horse","first_name":"A","last_name":"B"}`, "email must be a valid e-mail address"},
		{`{"email":"a@example.com","password":"short","first_name":"A","last_name":"B"}`, "password must be between 8 and 128 characters"},
		{`{"email":"a@example.com","password":"correct-horse","first_name":"  ","last_name":"B"}`, "first_name is required"},
		{`{"email":"a@example.com","password":"correct-horse","first_name":"A"}`, "last_name is required"},
		{`{"email":1}`, "email must be a string"},
		{`{"email":`, "request body is not valid JSON"},
		{``, "request body is required"},
	}
	for _, tc := range cases {
		resp, body := s.call(t, s.anon(t), http.MethodPost, "/internal/auth/register", tc.body)
		wantFailure(t, resp, body, 400, tc.msg)
	}
	resp, body := s.call(t, s.anon(t), http.MethodPost, "/internal/auth/register", `{"email":"`+strings.Repeat("a", 70*1024)+`"}`)
	wantFailure(t, resp, body, 413, "request body exceeds 64 KiB")
}

func TestLogoutAndValidate(t *testing.T) {
	s := boot(t)
	ada := register(t, s, "ada@example.com")
	ctx := s.anon(t)
	u, err := userOf(s.client.Validate(ctx, ada.Token))
	if err != nil || u.Status != "active" {
		t.Fatalf("validate = %+v, %v", u, err)
	}
	// A ban written to the database counts on the very next call.
	s.setUser(t, ada.User.ID, bson.D{{Key: "status", Value: "banned"}, {Key: "role", Value: "moderator"}})
	if u, err := userOf(s.client.Validate(ctx, ada.Token)); err != nil || u.Status != "banned" || u.Role != "moderator" {
		t.Fatalf("validate after a ban = %+v, %v", u, err)
	}
	s.setUser(t, ada.User.ID, bson.D{{Key: "status", Value: "active"}, {Key: "timeout_until", Value: time.Now().Add(time.Hour)}})
	if u, _ := userOf(s.client.Validate(ctx, ada.Token)); u.Status != "suspended" || u.TimeoutUntil == nil {
		t.Fatalf("validate while suspended = %+v", u)
	}
	s.setUser(t, ada.User.ID, bson.D{{Key: "timeout_until", Value: time.Now().Add(-time.Second)}})
	if u, _ := userOf(s.client.Validate(ctx, ada.Token)); u.Status != "active" {
		t.Fatalf("validate after the timeout = %+v", u)
	}

	resp, body := s.call(t, ctx, http.MethodPost, "/internal/auth/logout", `{"token":"`+ada.Token+`"}`)
	if resp.StatusCode != 200 || body != `{"status":"logged_out"}` {
		t.Fatalf("logout = %d %s", resp.StatusCode, body)
	}
	_, err = s.client.Validate(ctx, ada.Token)
	wantErr(t, err, errs.KindUnauthenticated, "session expired or invalid")
	if err := s.client.Logout(ctx, ada.Token); err != nil {
		t.Fatalf("logout again: %v", err)
	}
	if err := s.client.Logout(ctx, "never-issued"); err != nil {
		t.Fatalf("logout of an unknown token: %v", err)
	}
	_, err = s.client.Validate(ctx, "never-issued")
	wantErr(t, err, errs.KindUnauthenticated, "session expired or invalid")
}

func TestInternalTokenRequired(t *testing.T) {
	s := boot(t)
	// A super admin named by a gateway key that is not ours; a token the gateway addressed to
	// link, not to auth; link acting as itself, which auth lets in nowhere.
	other, err := identity.GenerateKeySet(identity.Gateway)
	if err != nil {
		t.Fatal(err)
	}
	otherGateway, _ := identity.NewKeys(identity.Gateway, other.Keys[identity.Gateway], other.Certs)
	forged, _ := otherGateway.SignCaller(identity.Caller{UserID: "x", Role: "super_admin"}, pkgconfig.Auth)
	forLink, _ := s.Keys.SignCaller(identity.Caller{UserID: "x", Role: "super_admin"}, pkgconfig.Link)
	asLink, _ := identity.TokenFor(testenv.Keys(t, pkgconfig.Link).AsService(t.Context()), pkgconfig.Auth)
	routes := [][2]string{
		{"POST", "/internal/auth/register"}, {"POST", "/internal/auth/login"}, {"POST", "/internal/auth/google"},
		{"POST", "/internal/auth/logout"}, {"POST", "/internal/auth/sessions/validate"}, {"GET", "/internal/auth/idp-config"},
		{"POST", "/internal/auth/users/x/role"}, {"GET", "/internal/auth/login-records"},
		{"GET", "/internal/auth/users"}, {"GET", "/internal/auth/users/counts"}, {"POST", "/internal/auth/users/x/timeout"},
		{"POST", "/internal/auth/users/x/ban"}, {"POST", "/internal/auth/users/x/unban"},
	}
	for _, r := range routes {
		resp, body := s.call(t, t.Context(), r[0], r[1], `{}`)
		wantFailure(t, resp, body, 401, "internal token required")
		for _, tok := range []string{forged, forLink, asLink} {
			s.DoWithToken(t, tok, r[0], r[1], `{}`).WantFailure(t, 401, "internal token invalid")
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, _ := s.call(t, t.Context(), "GET", p, "")
		if resp.StatusCode != 200 {
			t.Fatalf("%s = %d", p, resp.StatusCode)
		}
	}
}

func TestIDPConfigUnconfigured(t *testing.T) {
	s := boot(t)
	resp, body := s.call(t, s.anon(t), "GET", "/internal/auth/idp-config", "")
	if resp.StatusCode != 200 || body != `{"enabled":false,"provider":"google"}` {
		t.Fatalf("idp-config = %d %s", resp.StatusCode, body)
	}
	resp, body = s.call(t, s.anon(t), "POST", "/internal/auth/google", `{"id_token":"a.b.c"}`)
	wantFailure(t, resp, body, 401, "identity provider not configured")
}

// userOf is the user of a validated session.
func userOf(v auth.Validated, err error) (auth.User, error) { return v.User, err }
