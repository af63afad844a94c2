package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/services/auth/authtest"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// tokenRate is the e2e stack's LINKMESH_TOKEN_RATE: small, so a test can spend a window.
const tokenRate = 60

// issuedSecrets are every API token secret the tests were shown; none may be stored, logged
// or traced anywhere (scanForClientIPs looks for them too).
var issuedSecrets []string

// tokenScopes are the contract's scopes.
var tokenScopes = []string{"links:read", "links:write", "analytics:read", "webhooks:write"}

// createToken makes an API token for the session and returns its secret and object.
func createToken(t *testing.T, cookie, name string, scopes ...string) (string, map[string]any) {
	t.Helper()
	body := `{"name":"` + name + `","scopes":["` + strings.Join(scopes, `","`) + `"]}`
	r := as(t, cookie, "POST", "/api/user/tokens", body)
	if r.status != 201 {
		t.Fatalf("create token: %d %s", r.status, r.body)
	}
	m := r.object(t)
	secret, _ := m["secret"].(string)
	tok, _ := m["token"].(map[string]any)
	if secret == "" || tok == nil {
		t.Fatalf("create token: %s", r.body)
	}
	issuedSecrets = append(issuedSecrets, secret)
	return secret, tok
}

// withToken sends a request carrying the API token secret (and the cookie, when set).
func withToken(t *testing.T, secret, cookie, method, path, body string) response {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + secret}
	if cookie != "" {
		h["Cookie"] = "go_session=" + cookie
	}
	return doWith(t, method, path, body, h)
}

// gatedOperation is an operation of the OpenAPI document that authenticates its caller: the
// role it needs and the token scope that opens it ("" refuses tokens). The gateway's unit
// tests keep the document equal to the table its gate reads.
type gatedOperation struct {
	minRole, scope string
}

func gatedOperations(t *testing.T) map[string]gatedOperation {
	t.Helper()
	out := map[string]gatedOperation{}
	for p, ops := range openAPIPaths(t) {
		for m, v := range ops {
			op, _ := v.(map[string]any)
			role, _ := op["x-min-role"].(string)
			scope, _ := op["x-token-scope"].(string)
			if role != "" {
				out[strings.ToUpper(m)+" "+p] = gatedOperation{role, scope}
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("%d gated operations in the document: the reader is broken", len(out))
	}
	return out
}

var codeOrID = regexp.MustCompile(`/(abc1234|nobody|r1|p1|t1|w1|s1)(/|$)`)

// documentedKey is the OpenAPI key of a request of the authorization matrix: its made-up
// codes and ids become the document's parameters.
func documentedKey(rt protectedRoute) string {
	p := codeOrID.ReplaceAllStringFunc(rt.path, func(s string) string {
		if strings.Trim(s, "/") == "abc1234" {
			return strings.Replace(s, "abc1234", "{code}", 1)
		}
		return strings.Replace(s, strings.Trim(s, "/"), "{id}", 1)
	})
	return rt.method + " " + p
}

func TestAPITokenLifecycle(t *testing.T) {
	a := register(t)
	secret, tok := createToken(t, a.cookie, "CI deploy", "links:write", "links:read")
	if !regexp.MustCompile(`^lm_[0-9A-Za-z]{43}$`).MatchString(secret) {
		t.Fatalf("secret %q", secret)
	}
	want := []string{"id", "name", "scopes", "prefix", "created_at", "expires_at", "last_used_at"}
	if len(tok) != len(want) {
		t.Fatalf("token fields %v, want %v", tok, want)
	}
	for _, k := range want {
		if _, ok := tok[k]; !ok {
			t.Fatalf("token lacks %s: %v", k, tok)
		}
	}
	created, _ := time.Parse(time.RFC3339, tok["created_at"].(string))
	expires, _ := time.Parse(time.RFC3339, tok["expires_at"].(string))
	if tok["name"] != "CI deploy" || tok["prefix"] != secret[:8] || tok["last_used_at"] != nil ||
		!slices.Equal(toStrings(tok["scopes"]), []string{"links:read", "links:write"}) || expires.Sub(created) != 90*24*time.Hour {
		t.Fatalf("token %v", tok)
	}

	// The token acts as its owner, with its window in every answer.
	r := withToken(t, secret, "", "GET", "/api/user/dashboard", "")
	if r.status != 200 {
		t.Fatalf("dashboard with token: %d %s", r.status, r.body)
	}
	if p := r.header.Get("RateLimit-Policy"); p != `"token";q=60;w=60` {
		t.Fatalf("RateLimit-Policy %q", p)
	}
	if s := r.header.Get("RateLimit"); !regexp.MustCompile(`^"token";r=5[0-9];t=\d+$`).MatchString(s) {
		t.Fatalf("RateLimit %q", s)
	}
	// Creation: no captcha, the owner's link, both windows reported.
	r = withToken(t, secret, "", "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/by-token","custom_code":"tok`+itoa(accountCounter)+`x"}`)
	if r.status != 201 {
		t.Fatalf("shorten with token: %d %s", r.status, r.body)
	}
	if p := r.header.Get("RateLimit-Policy"); !regexp.MustCompile(`^"token";q=60;w=60, "create";q=100;w=2592000$`).MatchString(p) {
		t.Fatalf("RateLimit-Policy %q", p)
	}
	if s := r.header.Get("RateLimit"); !regexp.MustCompile(`^"token";r=\d+;t=\d+, "create";r=99;t=\d+$`).MatchString(s) {
		t.Fatalf("RateLimit %q", s)
	}
	code, _ := r.object(t)["short_code"].(string)
	if l := as(t, a.cookie, "GET", "/api/user/links?q="+code, ""); !strings.Contains(string(l.body), code) {
		t.Fatalf("the token's link is not its owner's: %s", l.body)
	}
	// A session's creation reports its window too.
	r = as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/by-session"}`)
	if p := r.header.Get("RateLimit-Policy"); r.status != 201 || p != `"create";q=100;w=2592000` || !strings.HasPrefix(r.header.Get("RateLimit"), `"create";r=98;t=`) {
		t.Fatalf("session creation: %d %q %q", r.status, p, r.header.Get("RateLimit"))
	}
	// And an anonymous one.
	r = do(t, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/anon"}`, newClientIP())
	if p := r.header.Get("RateLimit-Policy"); r.status != 201 || p != `"create";q=10;w=86400` || !strings.HasPrefix(r.header.Get("RateLimit"), `"create";r=9;t=`) {
		t.Fatalf("anonymous creation: %d %q %q", r.status, p, r.header.Get("RateLimit"))
	}

	// A token decides over a cookie; a token may not manage tokens or reach auth or admin routes.
	other := register(t)
	if r := withToken(t, secret, other.cookie, "GET", "/api/user/links?q="+code, ""); !strings.Contains(string(r.body), code) {
		t.Fatalf("with both, the token must decide: %d %s", r.status, r.body)
	}
	withToken(t, secret, "", "GET", "/api/user/tokens", "").wantError(t, 403, "API tokens are not accepted on this route")
	withToken(t, secret, "", "POST", "/api/user/tokens", `{"name":"x","scopes":["links:read"]}`).wantError(t, 403, "API tokens are not accepted on this route")
	withToken(t, secret, "", "GET", "/api/auth/me", "").wantError(t, 403, "API tokens are not accepted on this route")
	withToken(t, secret, a.cookie, "POST", "/api/auth/logout", "").wantError(t, 403, "API tokens are not accepted on this route")
	withToken(t, secret, "", "POST", "/api/auth/login", `{"email":"x@example.com","password":"y"}`).wantError(t, 403, "API tokens are not accepted on this route")
	if r := as(t, a.cookie, "GET", "/api/auth/me", ""); r.status != 200 {
		t.Fatalf("a refused logout with a token must not end the session: %d", r.status)
	}
	withToken(t, secret, "", "GET", "/api/admin/overview", "").wantError(t, 403, "API tokens are not accepted on this route")
	withToken(t, secret, "", "GET", "/api/user/links/"+code+"/analytics", "").wantError(t, 403, "token lacks scope analytics:read")
	// Another user's links stay 404 to the token.
	theirs, _ := shorten(t, newClientIP(), `{"url":"https://93.184.216.34/theirs"}`)
	withToken(t, secret, "", "DELETE", "/api/user/links/"+theirs, "").wantError(t, 404, "short link not found")

	// last_used_at is recorded (it may lag by up to a minute; here it comes at once).
	deadline := time.Now().Add(5 * time.Second)
	for {
		l := as(t, a.cookie, "GET", "/api/user/tokens", "")
		toks, _ := l.object(t)["tokens"].([]any)
		if len(toks) == 1 && toks[0].(map[string]any)["last_used_at"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last_used_at never set: %s", l.body)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Another user cannot revoke it; revoked, it is refused at once everywhere.
	as(t, other.cookie, "DELETE", "/api/user/tokens/"+tok["id"].(string), "").wantError(t, 404, "API token not found")
	if r := as(t, a.cookie, "DELETE", "/api/user/tokens/"+tok["id"].(string), ""); r.status != 200 || string(r.body) != `{"status":"revoked"}` {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	for _, base := range []string{gw, gw2} {
		if base == "" {
			continue
		}
		ans, err := stack.Send(client, base, "GET", "/api/user/dashboard", "", map[string]string{"Authorization": "Bearer " + secret})
		if err != nil {
			t.Fatal(err)
		}
		if ans.Status != 401 {
			t.Fatalf("revoked token on %s: %d %s", base, ans.Status, ans.Body)
		}
	}
	as(t, a.cookie, "DELETE", "/api/user/tokens/"+tok["id"].(string), "").wantError(t, 404, "API token not found")
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestAPITokenRefusals(t *testing.T) {
	a := register(t)
	for _, tc := range []struct{ body, msg string }{
		{`{"scopes":["links:read"]}`, "name is required"},
		{`{"name":"","scopes":["links:read"]}`, "name must be between 1 and 64 characters"},
		{`{"name":"x"}`, "scopes must list at least one of links:read, links:write, analytics:read, webhooks:write"},
		{`{"name":"x","scopes":["root"]}`, `scopes: unknown scope "root" (known: links:read, links:write, analytics:read, webhooks:write)`},
		{`{"name":"x","scopes":["links:read"],"expires_in_days":366}`, "expires_in_days must be between 1 and 365"},
		{`{"name":"x","scopes":"links:read"}`, "scopes must be an array"},
	} {
		r := as(t, a.cookie, "POST", "/api/user/tokens", tc.body)
		if tc.msg == "scopes must be an array" {
			if r.status != 400 {
				t.Fatalf("%s: %d %s", tc.body, r.status, r.body)
			}
			continue
		}
		r.wantError(t, 400, tc.msg)
	}
	do(t, "POST", "/api/user/tokens", `{"name":"x","scopes":["links:read"]}`, "").wantError(t, 401, "authentication required")

	for _, h := range []string{"Basic dXNlcjpwYXNz", "Bearer", "Bearer "} {
		doWith(t, "GET", "/api/user/links", "", map[string]string{"Authorization": h}).wantError(t, 401, "Authorization must be Bearer and an API token")
	}
	for _, s := range []string{"nope", "lm_", "lm_" + strings.Repeat("A", 43), "lm_" + strings.Repeat("A", 500)} {
		withToken(t, s, "", "GET", "/api/user/links", "").wantError(t, 401, "API token invalid, expired or revoked")
	}

	// Expired: the database says so (the TTL index deletes it within about a minute).
	secret, tok := createToken(t, a.cookie, "expiring", "links:read")
	if _, err := serviceDB(t, "auth").Collection("api_tokens").UpdateByID(context.Background(), tok["id"],
		bson.D{{Key: "$set", Value: bson.D{{Key: "expires_at", Value: time.Now().Add(-time.Second)}}}}); err != nil {
		t.Fatal(err)
	}
	withToken(t, secret, "", "GET", "/api/user/links", "").wantError(t, 401, "API token invalid, expired or revoked")

	// A banned or suspended owner's token is refused like their session.
	secret, _ = createToken(t, a.cookie, "owner banned", "links:read")
	setUser(t, a.id, authtest.Restriction{Status: "banned"})
	withToken(t, secret, "", "GET", "/api/user/links", "").wantError(t, 403, "account is banned")
	setUser(t, a.id, authtest.Restriction{Status: "active"})
	if r := withToken(t, secret, "", "GET", "/api/user/links", ""); r.status != 200 {
		t.Fatalf("unbanned: %d %s", r.status, r.body)
	}

	// The window: tokenRate requests, then 429 with Retry-After and r=0.
	b := register(t)
	secret, _ = createToken(t, b.cookie, "busy", "links:read")
	for i := range tokenRate {
		if r := withToken(t, secret, "", "GET", "/api/user/links", ""); r.status != 200 {
			t.Fatalf("request %d: %d %s", i, r.status, r.body)
		}
	}
	r := withToken(t, secret, "", "GET", "/api/user/links", "")
	r.wantError(t, 429, "API token rate limit exceeded")
	if r.header.Get("Retry-After") == "" || !strings.HasPrefix(r.header.Get("RateLimit"), `"token";r=0;t=`) ||
		r.header.Get("RateLimit-Policy") != `"token";q=60;w=60` {
		t.Fatalf("429 headers: %v", r.header)
	}
	// The session is not limited by its token's window.
	if r := as(t, b.cookie, "GET", "/api/user/links", ""); r.status != 200 || r.header.Get("RateLimit") != "" {
		t.Fatalf("session after the token's window: %d %v", r.status, r.header)
	}
}

// TestTokenScopeMatrix runs every gated route with a token of each scope, from the table
// the gate reads (through the OpenAPI document the gateway's tests keep equal to it): a
// route without a scope refuses every token, a route with one admits exactly its scope.
func TestTokenScopeMatrix(t *testing.T) {
	ops := gatedOperations(t)
	a := register(t)
	secrets := map[string]string{}
	for _, s := range tokenScopes {
		secrets[s], _ = createToken(t, a.cookie, "only "+s, s)
	}
	covered := map[string]bool{}
	for _, rt := range protectedRoutes {
		key := documentedKey(rt)
		op, ok := ops[key]
		if !ok {
			t.Errorf("%s is not a gated operation of the document", key)
			continue
		}
		covered[key] = true
		for _, scope := range tokenScopes {
			r := withToken(t, secrets[scope], "", rt.method, rt.path, rt.body)
			switch {
			case op.scope == "":
				r.wantError(t, 403, "API tokens are not accepted on this route")
			case op.scope != scope:
				r.wantError(t, 403, "token lacks scope "+op.scope)
			case rank[rt.minRole] > rank["user"]:
				r.wantError(t, 403, rt.minRole+" role required")
			case r.status != rt.built:
				t.Errorf("%s with %s: %d, want %d (%s)", key, scope, r.status, rt.built, r.body)
			}
			if r.header.Get("RateLimit-Policy") == "" && op.scope != "" {
				t.Errorf("%s with %s: no RateLimit-Policy", key, scope)
			}
		}
	}
	for key, op := range ops {
		if !covered[key] && !strings.HasPrefix(key, "HEAD ") && op.minRole != "anonymous" && !strings.HasPrefix(key, "GET /api/auth/") {
			t.Errorf("%s is gated but not in the authorization matrix", key)
		}
	}
}

// scanLogsForSecrets fails when any service log under dir holds an issued secret.
func scanLogsForSecrets(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return err
	}
	scanned := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a directory
		}
		scanned++
		for _, s := range issuedSecrets {
			if strings.Contains(string(b), strings.TrimPrefix(strings.TrimPrefix(s, "lm_"), "whsec_")) {
				return fmt.Errorf("secret %s… found in the log %s", s[:8], f)
			}
		}
	}
	if scanned == 0 && len(issuedSecrets) > 0 {
		return fmt.Errorf("no service log found under %s: the secret scan is broken", dir)
	}
	return nil
}
