package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
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
	return a
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

// setUser changes a stored account the way the moderation features will (ban, timeout).
func setUser(t *testing.T, id string, set bson.D) {
	t.Helper()
	setStored(t, "auth", "users", bson.D{{Key: "_id", Value: id}}, set)
}

// setStored $sets fields of exactly one document in a service's own database: the state
// changes whose API arrives with later features.
func setStored(t *testing.T, service, collection string, filter, set bson.D) {
	t.Helper()
	ctx := context.Background()
	mc, err := mongo.Connect(options.Client().ApplyURI(mongoURI))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mc.Disconnect(ctx) }()
	res, err := mc.Database(dbPrefix+"_"+service).Collection(collection).UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: set}})
	if err != nil || res.MatchedCount != 1 {
		t.Fatalf("update %s.%s %v: %v %+v", service, collection, filter, err, res)
	}
}

func mustContainAll(t *testing.T, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Fatalf("%q lacks %q", s, p)
		}
	}
}
