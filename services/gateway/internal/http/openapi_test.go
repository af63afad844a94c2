package http

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/trace/noop"
	"gopkg.in/yaml.v3"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/gateway/api"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clientip"
	"github.com/linkmesh/linkmesh/services/gateway/internal/redirect"
	"github.com/linkmesh/linkmesh/services/gateway/internal/session"
	"github.com/linkmesh/linkmesh/services/gateway/internal/webapp"
)

// doc is the parsed OpenAPI document: nested map[string]any / []any, as YAML decodes it.
type doc map[string]any

func loadDoc(t *testing.T) doc {
	t.Helper()
	// Decoded into a plain map: yaml.v3 would give nested mappings the named type.
	var m map[string]any
	if err := yaml.Unmarshal(api.OpenAPI, &m); err != nil {
		t.Fatalf("openapi.yaml is not valid YAML: %v", err)
	}
	return doc(m)
}

// lookup follows a local JSON pointer ("#/components/schemas/Error").
func (d doc) lookup(ref string) (any, bool) {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var cur any = map[string]any(d)
	for _, tok := range strings.Split(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// resolve replaces a reference object by its target, following chains.
func (d doc) resolve(t *testing.T, v any) map[string]any {
	t.Helper()
	for range 10 {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("not an object: %v", v)
		}
		ref, isRef := m["$ref"].(string)
		if !isRef {
			return m
		}
		if v, ok = d.lookup(ref); !ok {
			t.Fatalf("unresolved $ref %q", ref)
		}
	}
	t.Fatal("$ref chain too long")
	return nil
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// operations returns every operation of the document, keyed "METHOD /path".
func (d doc) operations(t *testing.T) map[string]map[string]any {
	t.Helper()
	paths, ok := d["paths"].(map[string]any)
	if !ok {
		t.Fatal("no paths")
	}
	ops := map[string]map[string]any{}
	for path, item := range paths {
		for k, v := range item.(map[string]any) {
			if slices.Contains(httpMethods, k) {
				ops[strings.ToUpper(k)+" "+path] = v.(map[string]any)
			}
		}
	}
	return ops
}

// messages returns the error messages a response documents in its examples.
func (d doc) messages(t *testing.T, resp map[string]any) []string {
	t.Helper()
	var out []string
	content, _ := resp["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	examples, _ := media["examples"].(map[string]any)
	for _, ex := range examples {
		value, _ := d.resolve(t, ex)["value"].(map[string]any)
		if msg, ok := value["error"].(string); ok {
			out = append(out, msg)
		}
	}
	return out
}

// walk calls fn on every map in v, with its JSON-pointer-ish location.
func walk(v any, at string, fn func(at string, m map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(at, x)
		for k, c := range x {
			walk(c, at+"/"+k, fn)
		}
	case []any:
		for _, c := range x {
			walk(c, at+"[]", fn)
		}
	}
}

func TestOpenAPIDocumentIsWellFormed(t *testing.T) {
	d := loadDoc(t)
	if v, _ := d["openapi"].(string); !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(v) {
		t.Fatalf("openapi: %q, want 3.1.x", v)
	}
	info, _ := d["info"].(map[string]any)
	if info["title"] != "linkmesh" || info["version"] != "0.1.0" {
		t.Fatalf("info: %v", info)
	}
	refs := 0
	walk(map[string]any(d), "", func(at string, m map[string]any) {
		ref, ok := m["$ref"].(string)
		if !ok {
			return
		}
		refs++
		if !strings.HasPrefix(ref, "#/components/") {
			t.Errorf("%s: $ref %q does not point into components", at, ref)
		} else if _, ok := d.lookup(ref); !ok {
			t.Errorf("%s: $ref %q does not resolve", at, ref)
		}
	})
	if refs == 0 {
		t.Fatal("no $ref found: the walk is broken")
	}

	schemes, _ := d["components"].(map[string]any)["securitySchemes"].(map[string]any)
	cookie, _ := schemes["cookieAuth"].(map[string]any)
	if cookie["type"] != "apiKey" || cookie["in"] != "cookie" || cookie["name"] != session.CookieName {
		t.Fatalf("cookieAuth: %v", cookie)
	}
	errSchema := d.resolve(t, map[string]any{"$ref": "#/components/schemas/Error"})
	if req, _ := errSchema["required"].([]any); len(req) != 1 || req[0] != "error" || errSchema["additionalProperties"] != false {
		t.Fatalf("Error schema must be exactly {error}: %v", errSchema)
	}

	ids := map[string]string{}
	for key, op := range d.operations(t) {
		id, _ := op["operationId"].(string)
		if id == "" || ids[id] != "" {
			t.Errorf("%s: operationId %q missing or shared with %s", key, id, ids[id])
		}
		ids[id] = key
		for _, req := range asSlice(op["security"]) {
			for name := range req.(map[string]any) {
				if schemes[name] == nil {
					t.Errorf("%s: unknown security scheme %q", key, name)
				}
			}
		}
		responses, _ := op["responses"].(map[string]any)
		if len(responses) == 0 {
			t.Errorf("%s: no responses", key)
		}
		for status, r := range responses {
			checkResponse(t, d, key+" "+status, status, strings.HasPrefix(key, "HEAD "), d.resolve(t, r))
		}
	}
}

// checkResponse applies the rules every response follows: X-Request-Id always, the error
// envelope on failures, Retry-After on 429.
func checkResponse(t *testing.T, d doc, where, status string, head bool, r map[string]any) {
	t.Helper()
	if !regexp.MustCompile(`^[1-5]\d\d$`).MatchString(status) {
		t.Errorf("%s: status key %q", where, status)
		return
	}
	headers, _ := r["headers"].(map[string]any)
	if headers["X-Request-Id"] == nil {
		t.Errorf("%s: no X-Request-Id header", where)
	}
	if status == "429" && headers["Retry-After"] == nil {
		t.Errorf("%s: 429 without Retry-After", where)
	}
	content, _ := r["content"].(map[string]any)
	if head {
		if content != nil {
			t.Errorf("%s: a HEAD response has no body", where)
		}
		return
	}
	if status < "400" {
		return
	}
	media, _ := content["application/json"].(map[string]any)
	if len(content) != 1 || media == nil {
		t.Errorf("%s: a failure must be application/json only", where)
		return
	}
	if schema, _ := media["schema"].(map[string]any); schema["$ref"] != "#/components/schemas/Error" {
		t.Errorf("%s: a failure must use the Error schema, got %v", where, schema)
	}
	if len(d.messages(t, r)) == 0 {
		t.Errorf("%s: no example message", where)
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// fakeSessions stands in for the auth service: the cookie value names the account.
type fakeSessions map[string]auth.User

func (f fakeSessions) ValidateToken(_ context.Context, secret string) (auth.TokenAuth, error) {
	return auth.TokenAuth{}, errs.E(errs.KindUnauthenticated, "API token invalid, expired or revoked")
}

func (f fakeSessions) Validate(_ context.Context, token string) (auth.Validated, error) {
	if u, ok := f[token]; ok {
		return auth.Validated{User: u, SessionID: "sid-" + token}, nil
	}
	return auth.Validated{}, errs.E(errs.KindUnauthenticated, "session expired or invalid")
}

// fakeLinks stands in for the link service on the redirect path.
type fakeLinks struct{}

func (fakeLinks) Resolve(_ context.Context, code string) (link.Resolved, error) {
	future, past := time.Now().Add(time.Hour), time.Now().Add(-time.Hour)
	switch code {
	case "live123":
		return link.Resolved{ShortCode: code, DestinationURL: "https://example.com/x", Status: link.StatusActive, ExpiresAt: future}, nil
	case "gone123":
		return link.Resolved{ShortCode: code, DestinationURL: "https://example.com/x", Status: link.StatusActive, ExpiresAt: past}, nil
	case "off1234":
		return link.Resolved{ShortCode: code, DestinationURL: "https://example.com/x", Status: link.StatusDisabled, ExpiresAt: future}, nil
	case "down123":
		return link.Resolved{}, errs.Unavailable("link service unavailable", nil)
	}
	return link.Resolved{}, errs.NotFound("short link not found")
}

const testSecret = "0123456789abcdef0123456789abcdef"

// newTestApp builds the gateway's routes as production does (same server factory, same
// Register) with in-memory stand-ins for the auth and link services and no datastores.
// The service clients stay nil: tests only send requests that are answered before them.
func newTestApp(t *testing.T, authDown *bool) *fiber.App {
	t.Helper()
	keys := testenv.Keys(t, identity.Gateway)
	until := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	sessions := fakeSessions{
		"user":      {ID: "u1", Role: auth.RoleUser, Status: auth.StatusActive},
		"mod":       {ID: "m1", Role: auth.RoleModerator, Status: auth.StatusActive},
		"super":     {ID: "s1", Role: auth.RoleSuperAdmin, Status: auth.StatusActive},
		"banned":    {ID: "b1", Role: auth.RoleSuperAdmin, Status: auth.StatusBanned},
		"suspended": {ID: "x1", Role: auth.RoleUser, Status: auth.StatusSuspended, TimeoutUntil: &until},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := server.New(server.Options{Name: "gateway", Logger: log, TracerProvider: noop.NewTracerProvider()})
	up := func(context.Context) error { return nil }
	web, err := webapp.New(webapp.Config{})
	if err != nil {
		panic(err)
	}
	Register(srv.App(), Deps{
		Web:      web,
		Gate:     session.NewGate(sessions, keys, clientip.NewResolver(nil), clientip.NewKeyer(testSecret), false),
		BaseURL:  "http://localhost:8080",
		Redirect: redirect.NewHandler(redirect.NewCache(16, fakeLinks{}), nil, clientip.NewResolver(nil)),
		Health: map[string]Probe{
			"auth": func(context.Context) error {
				if authDown != nil && *authDown {
					return errors.New("connection refused")
				}
				return nil
			},
			"link": up,
		},
		Logger: log,
	})
	return srv.App()
}

// probes are the routes of the server itself, outside the public API.
var probes = map[string]bool{"/healthz": true, "/readyz": true}

var fiberParam = regexp.MustCompile(`:(\w+)`)

// TestOpenAPIMatchesRoutes fails when a route is registered but not documented, or
// documented but not registered. Fiber's HEAD twin of a GET route is covered by the
// document's rule "every GET also answers HEAD" unless the document lists the HEAD itself.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	app := newTestApp(t, nil)
	registered := map[string]bool{}
	for _, r := range app.GetRoutes(true) {
		if probes[r.Path] {
			continue
		}
		registered[r.Method+" "+fiberParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	if len(registered) == 0 {
		t.Fatal("no routes registered")
	}
	documented := loadDoc(t).operations(t)

	var undocumented, unregistered []string
	for key := range registered {
		method, path, _ := strings.Cut(key, " ")
		if method == fiber.MethodHead && documented[key] == nil {
			if !registered["GET "+path] {
				t.Errorf("%s is registered without a GET twin, so the document must list it", key)
			}
			key = "GET " + path // covered by the GET operation
		}
		if documented[key] == nil {
			undocumented = append(undocumented, key)
		}
	}
	for key := range documented {
		if !registered[key] {
			unregistered = append(unregistered, key)
		}
		// The document promises HEAD on every GET.
		if path, ok := strings.CutPrefix(key, "GET "); ok && !registered["HEAD "+path] {
			t.Errorf("%s does not answer HEAD, but the document says every GET does", key)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unregistered)
	if len(undocumented) > 0 {
		t.Errorf("routes missing from openapi.yaml:\n  %s", strings.Join(undocumented, "\n  "))
	}
	if len(unregistered) > 0 {
		t.Errorf("operations in openapi.yaml that the gateway does not serve:\n  %s", strings.Join(unregistered, "\n  "))
	}
}

// TestOpenAPIGatedRoutes checks the gate table against the document: minimum role, the
// security requirements (anonymous, cookie, token), the token scope, the gates' answers,
// and 501 exactly for the routes still to be built.
func TestOpenAPIGatedRoutes(t *testing.T) {
	d := loadDoc(t)
	ops := d.operations(t)
	schemes, _ := d["components"].(map[string]any)["securitySchemes"].(map[string]any)
	if bearer, _ := schemes["bearerAuth"].(map[string]any); bearer["type"] != "http" || bearer["scheme"] != "bearer" {
		t.Fatalf("bearerAuth: %v", bearer)
	}
	for _, r := range (&handlers{}).gatedRoutes() {
		key := r.method + " /api" + fiberParam.ReplaceAllString(r.path, "{$1}")
		op := ops[key]
		if op == nil {
			t.Errorf("%s: not documented", key)
			continue
		}
		wantRole := r.role
		if wantRole == "" {
			wantRole = "anonymous"
		}
		if op["x-min-role"] != wantRole {
			t.Errorf("%s: x-min-role %v, want %s", key, op["x-min-role"], wantRole)
		}
		if scope, _ := op["x-token-scope"].(string); scope != r.scope {
			t.Errorf("%s: x-token-scope %q, want %q", key, scope, r.scope)
		}
		var got []string
		for _, req := range asSlice(op["security"]) {
			names := []string{}
			for name := range req.(map[string]any) {
				names = append(names, name)
			}
			if len(names) == 0 {
				names = []string{"anonymous"}
			}
			got = append(got, strings.Join(names, "+"))
		}
		want := []string{"cookieAuth"}
		if r.scope != "" {
			want = append(want, "bearerAuth")
		}
		if r.role == "" {
			want = append(want, "anonymous")
		}
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: security %v, want %v", key, got, want)
		}
		responses, _ := op["responses"].(map[string]any)
		for _, status := range []string{"401", "403", "503"} {
			if responses[status] == nil {
				t.Errorf("%s: no %s response", key, status)
			}
		}
		if _, has501 := responses["501"]; has501 != (r.handle == nil) {
			t.Errorf("%s: 501 documented: %v; handler still to be built: %v", key, has501, r.handle == nil)
		}
		if r.scope != "" && responses["429"] == nil {
			t.Errorf("%s: a token route must document 429 (the token's window)", key)
		}
		if responses["403"] == nil {
			continue
		}
		msgs := d.messages(t, d.resolve(t, responses["403"]))
		if r.role != "" && r.role != auth.RoleUser && !slices.Contains(msgs, r.role+" role required") {
			t.Errorf("%s: 403 does not document %q: %v", key, r.role+" role required", msgs)
		}
		wantMsgs := []string{"account is banned"}
		if r.scope == "" {
			wantMsgs = append(wantMsgs, "API tokens are not accepted on this route")
		} else {
			wantMsgs = append(wantMsgs, "token lacks scope "+r.scope)
		}
		for _, want := range wantMsgs {
			if !slices.Contains(msgs, want) {
				t.Errorf("%s: 403 does not document %q: %v", key, want, msgs)
			}
		}
		if r.method != fiber.MethodGet && !slices.Contains(msgs, "cross-site request refused") {
			t.Errorf("%s: 403 does not document the cross-site refusal", key)
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	app := newTestApp(t, nil)
	for _, method := range []string{"GET", "HEAD"} {
		resp, err := app.Test(httptest.NewRequest(method, "/api/openapi.yaml", nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != openAPIContentType {
			t.Fatalf("%s: %d %q", method, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		want := api.OpenAPI
		if method == "HEAD" {
			want = nil
		}
		if string(body) != string(want) {
			t.Fatalf("%s: body is not the embedded document (%d bytes, want %d)", method, len(body), len(want))
		}
	}
}

// rfc3339 matches the time in messages such as "account is suspended until ...".
var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// TestDocumentedAnswers sends requests the gateway answers without its services and checks
// that each answer's status is documented for the operation and, for failures, that its
// exact message is one of the documented examples.
func TestDocumentedAnswers(t *testing.T) {
	authDown := false
	app := newTestApp(t, &authDown)
	d := loadDoc(t)
	ops := d.operations(t)
	evil := map[string]string{"Origin": "https://evil.example"}
	gzip := map[string]string{"Content-Encoding": "gzip"}
	cases := []struct {
		method, path string
		// op is the documented operation ("GET /{code}"), or "#/components/responses/X"
		// for answers not tied to one operation.
		op      string
		cookie  string
		headers map[string]string
		body    string
		down    bool
		status  int
	}{
		{"GET", "/api/health", "GET /api/health", "", nil, "", false, 200},
		{"GET", "/api/health", "GET /api/health", "", nil, "", true, 503},
		{"GET", "/api/openapi.yaml", "GET /api/openapi.yaml", "", nil, "", false, 200},

		{"POST", "/api/links/shorten", "POST /api/links/shorten", "", nil, "", false, 400},
		{"POST", "/api/links/shorten", "POST /api/links/shorten", "", nil, `{"url":`, false, 400},
		{"POST", "/api/links/shorten", "POST /api/links/shorten", "", nil, `[1]`, false, 400},
		{"POST", "/api/links/shorten", "POST /api/links/shorten", "", nil, `{"url":"x"} {}`, false, 400},
		{"POST", "/api/links/shorten", "POST /api/links/shorten", "", nil, `{"url":42}`, false, 400},
		{"POST", "/api/links/shorten", "POST /api/links/shorten", "", nil, `{"url":"https://example.com","expiration_days":1.5}`, false, 400},
		{"POST", "/api/links/shorten", "POST /api/links/shorten", "", gzip, "\x1f\x8b", false, 415},
		{"POST", "/api/links/shorten", "POST /api/links/shorten", "nope", nil, `{"url":"https://example.com"}`, false, 401},
		{"POST", "/api/links/shorten", "POST /api/links/shorten", "user", evil, `{"url":"https://example.com"}`, false, 403},
		{"POST", "/api/links/shorten", "POST /api/links/shorten", "banned", nil, `{"url":"https://example.com"}`, false, 403},
		{"POST", "/api/links/shorten", "POST /api/links/shorten", "suspended", nil, `{"url":"https://example.com"}`, false, 403},

		{"GET", "/api/links/not.a.code/info", "GET /api/links/{code}/info", "", nil, "", false, 404},

		{"GET", "/live123", "GET /{code}", "", nil, "", false, 302},
		{"HEAD", "/live123", "HEAD /{code}", "", nil, "", false, 302},
		{"GET", "/off1234", "GET /{code}", "", nil, "", false, 403},
		{"GET", "/gone123", "GET /{code}", "", nil, "", false, 410},
		{"GET", "/nope123", "GET /{code}", "", nil, "", false, 404},
		{"HEAD", "/nope123", "HEAD /{code}", "", nil, "", false, 404},
		{"GET", "/not.a.code", "GET /{code}", "", nil, "", false, 404},
		{"GET", "/down123", "GET /{code}", "", nil, "", false, 503},

		{"POST", "/api/auth/register", "POST /api/auth/register", "", nil, `{"email":`, false, 400},
		{"POST", "/api/auth/register", "POST /api/auth/register", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, `{}`, false, 403},
		{"POST", "/api/auth/login", "POST /api/auth/login", "", evil, `{}`, false, 403},
		{"POST", "/api/auth/login", "POST /api/auth/login", "", map[string]string{"Origin": "null"}, `{}`, false, 403},
		{"POST", "/api/auth/login", "POST /api/auth/login", "", gzip, "\x1f\x8b", false, 415},
		{"POST", "/api/auth/google", "POST /api/auth/google", "", nil, `[]`, false, 400},
		{"POST", "/api/auth/google", "POST /api/auth/google", "", nil, `{"id_token":7}`, false, 400},
		{"POST", "/api/auth/logout", "POST /api/auth/logout", "", nil, "", false, 200},
		{"POST", "/api/auth/logout", "POST /api/auth/logout", "user", map[string]string{"Sec-Fetch-Site": "cross-site"}, "", false, 403},
		{"GET", "/api/auth/me", "GET /api/auth/me", "", nil, "", false, 401},
		{"GET", "/api/auth/me", "GET /api/auth/me", "nope", nil, "", false, 401},
		{"GET", "/api/auth/me", "GET /api/auth/me", "banned", nil, "", false, 200},

		{"GET", "/api/user/dashboard", "GET /api/user/dashboard", "", nil, "", false, 401},
		{"GET", "/api/user/links/abc1234/analytics", "GET /api/user/links/{code}/analytics", "", nil, "", false, 401},
		{"GET", "/api/user/links/abc1234/analytics", "GET /api/user/links/{code}/analytics", "suspended", nil, "", false, 403},
		{"GET", "/api/user/dashboard", "GET /api/user/dashboard", "suspended", nil, "", false, 403},
		{"DELETE", "/api/user/links/abc1234", "DELETE /api/user/links/{code}", "user", evil, "", false, 403},
		{"GET", "/api/admin/overview", "GET /api/admin/overview", "user", nil, "", false, 403},
		{"POST", "/api/admin/users/u9/ban", "POST /api/admin/users/{id}/ban", "mod", nil, `"x"`, false, 400},
		{"POST", "/api/admin/users/u9/ban", "POST /api/admin/users/{id}/ban", "user", nil, `{"reason":"x"}`, false, 403},
		{"POST", "/api/admin/users/u9/timeout", "POST /api/admin/users/{id}/timeout", "mod", nil, `[]`, false, 400},
		{"POST", "/api/admin/links/abc1234/disable", "POST /api/admin/links/{code}/disable", "mod", nil, `{"a":1}{"b":2}`, false, 400},
		{"DELETE", "/api/admin/links/abc1234", "DELETE /api/admin/links/{code}", "mod", evil, "", false, 403},
		{"POST", "/api/admin/reports/r1/resolve", "POST /api/admin/reports/{id}/resolve", "mod", nil, ``, false, 400},
		{"POST", "/api/reports", "POST /api/reports", "", nil, `{"short_code":`, false, 400},
		{"POST", "/api/reports", "POST /api/reports", "", gzip, "\x1f\x8b", false, 415},
		{"GET", "/api/admin/login-records", "GET /api/admin/login-records", "mod", nil, "", false, 403},
		{"GET", "/api/admin/login-records", "GET /api/admin/login-records", "banned", nil, "", false, 403},
		{"POST", "/api/admin/users/u9/role", "POST /api/admin/users/{id}/role", "mod", nil, `{"role":"user"}`, false, 403},
		{"POST", "/api/admin/users/u9/role", "POST /api/admin/users/{id}/role", "super", nil, `{"role":5}`, false, 400},
		{"POST", "/api/admin/users/u9/role", "POST /api/admin/users/{id}/role", "super", nil, ``, false, 400},
		{"POST", "/api/admin/users/u9/role", "POST /api/admin/users/{id}/role", "super", gzip, "\x1f\x8b", false, 415},
		{"GET", "/api/admin/audit-log", "GET /api/admin/audit-log", "mod", nil, "", false, 403},

		{"GET", "/api/nothing/here", "#/components/responses/NotFound", "", nil, "", false, 404},
		{"POST", "/api/health", "#/components/responses/MethodNotAllowed", "", nil, "{}", false, 405},
		{"DELETE", "/abc1234", "#/components/responses/MethodNotAllowed", "", nil, "", false, 405},
		{"GET", "/api/links/shorten", "#/components/responses/MethodNotAllowed", "", nil, "", false, 405},
	}
	for _, tc := range cases {
		name := tc.method + " " + tc.path + " cookie=" + tc.cookie
		var body io.Reader
		if tc.body != "" {
			body = strings.NewReader(tc.body)
		}
		req := httptest.NewRequest(tc.method, tc.path, body)
		if tc.cookie != "" {
			req.Header.Set("Cookie", session.CookieName+"="+tc.cookie)
		}
		for k, v := range tc.headers {
			req.Header.Set(k, v)
		}
		authDown = tc.down
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", name, resp.StatusCode, raw, tc.status)
			continue
		}
		if resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("%s: no X-Request-Id", name)
		}

		var documented map[string]any
		if strings.HasPrefix(tc.op, "#/") {
			documented = d.resolve(t, map[string]any{"$ref": tc.op})
		} else {
			op := ops[tc.op]
			if op == nil {
				t.Fatalf("%s: operation %s not documented", name, tc.op)
			}
			r, ok := op["responses"].(map[string]any)[itoa(tc.status)]
			if !ok {
				t.Errorf("%s: %s does not document status %d", name, tc.op, tc.status)
				continue
			}
			documented = d.resolve(t, r)
		}
		for h := range documented["headers"].(map[string]any) {
			if resp.Header.Get(h) == "" {
				t.Errorf("%s: documented header %s is missing", name, h)
			}
		}
		if tc.status < 400 || tc.method == "HEAD" {
			continue
		}
		var env map[string]string
		if err := json.Unmarshal(raw, &env); err != nil || len(env) != 1 || env["error"] == "" {
			t.Errorf("%s: not the error envelope: %s", name, raw)
			continue
		}
		got := rfc3339.ReplaceAllString(env["error"], "<time>")
		var msgs []string
		for _, m := range d.messages(t, documented) {
			msgs = append(msgs, rfc3339.ReplaceAllString(m, "<time>"))
		}
		if !slices.Contains(msgs, got) {
			t.Errorf("%s: message %q is not documented for %d (documented: %q)", name, env["error"], tc.status, msgs)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
