package e2e

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/linkmesh/linkmesh/services/auth/authtest"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// account is a registered user and the session cookie it holds.
type account struct {
	id, email, password, cookie string
	// registered is the user object the registration answered.
	registered map[string]any
}

// sessionCookie returns the go_session value a response set, or "".
func sessionCookie(r response) string {
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == "go_session" && c.Value != "" {
			return c.Value
		}
	}
	return ""
}

var accountCounter int

// register creates a fresh account and returns it signed in.
func register(t *testing.T) account {
	t.Helper()
	accountCounter++
	a := account{email: "user" + itoa(accountCounter) + "." + dbPrefix + "@example.com", password: "s3cret-passphrase"}
	r := do(t, "POST", "/api/auth/register", `{"email":"`+a.email+`","password":"`+a.password+`","first_name":"Ada","last_name":"Lovelace"}`, newClientIP())
	if r.status != 201 {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	u, _ := r.object(t)["user"].(map[string]any)
	a.id, _ = u["id"].(string)
	a.registered = u
	a.cookie = sessionCookie(r)
	if a.id == "" || a.cookie == "" {
		t.Fatalf("register gave no id or cookie: %v %v", r.body, r.header)
	}
	// As its owner would: open the verification link mailed to the address, which ends
	// every session, and sign in again.
	verifyEmail(t, a.email)
	r, a.cookie = loginAs(t, a.email, a.password, newClientIP())
	if r.status != 200 || a.cookie == "" {
		t.Fatalf("sign in after verifying: %d %s", r.status, r.body)
	}
	a.registered, _ = r.object(t)["user"].(map[string]any)
	return a
}

var verifyLink = regexp.MustCompile(`/#/verify-email\?token=([A-Za-z0-9_-]+)`)

// verifyEmail opens the newest verification link mailed to email and returns the account.
func verifyEmail(t *testing.T, email string) map[string]any {
	t.Helper()
	m := verifyLink.FindStringSubmatch(mailTo(t, email, "Verify your e-mail address for linkmesh"))
	if m == nil {
		t.Fatalf("no verification link mailed to %s", email)
	}
	r := do(t, "POST", "/api/auth/verify-email", `{"token":"`+m[1]+`"}`, newClientIP())
	u, _ := r.object(t)["user"].(map[string]any)
	if r.status != 200 || u["email_verified"] != true {
		t.Fatalf("verify %s: %d %s", email, r.status, r.body)
	}
	return u
}

// loginAs signs in with e-mail and password and returns the response and its cookie.
func loginAs(t *testing.T, email, password, ip string) (response, string) {
	t.Helper()
	r := do(t, "POST", "/api/auth/login", `{"email":"`+email+`","password":"`+password+`"}`, ip)
	return r, sessionCookie(r)
}

// as sends a request carrying the session cookie.
func as(t *testing.T, cookie, method, path, body string) response {
	t.Helper()
	h := map[string]string{}
	if cookie != "" {
		h["Cookie"] = "go_session=" + cookie
	}
	return doWith(t, method, path, body, h)
}

// admin returns a signed-in session of the bootstrap super admin.
func admin(t *testing.T) string {
	t.Helper()
	r, cookie := loginAs(t, adminEmail, adminPassword, newClientIP())
	if r.status != 200 || cookie == "" {
		t.Fatalf("bootstrap admin login: %d %s", r.status, r.body)
	}
	return cookie
}

// setUser restricts a stored account through the auth service's test seam, the way the
// moderation features will (ban, timeout).
func setUser(t *testing.T, id string, r authtest.Restriction) {
	t.Helper()
	if err := authtest.Restrict(context.Background(), serviceDB(t, "auth"), id, r); err != nil {
		t.Fatalf("restrict %s: %v", id, err)
	}
}

// serviceDB is a service's own database, for its test seam; only the seam touches it.
func serviceDB(t *testing.T, service string) *mongo.Database {
	t.Helper()
	mc, err := mongo.Connect(options.Client().ApplyURI(mongoURI))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Disconnect(context.Background()) })
	return mc.Database(dbPrefix + "_" + service)
}

func mustContainAll(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Fatalf("%q lacks %q", s, p)
		}
	}
}
