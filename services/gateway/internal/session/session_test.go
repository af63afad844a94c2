package session

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/ratelimit"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clientip"
)

type fakeAuth map[string]auth.User

func (f fakeAuth) Validate(_ context.Context, token string) (auth.Validated, error) {
	u, ok := f[token]
	if !ok {
		return auth.Validated{}, errs.E(errs.KindUnauthenticated, "session expired or invalid")
	}
	return auth.Validated{User: u, SessionID: "sid-" + token}, nil
}

// ValidateToken knows secrets "lm_<user cookie>_<scope>": the user's token with one scope;
// "lm_spent" is a token whose window is spent.
func (f fakeAuth) ValidateToken(_ context.Context, secret string) (auth.TokenAuth, error) {
	rate := ratelimit.Window{Name: "token", Limit: 600, WindowSeconds: 60, Remaining: 599, ResetSeconds: 60}
	if secret == "lm_spent" {
		rate.Remaining = 0
		return auth.TokenAuth{User: f["user"], TokenID: "t-spent", Scopes: auth.TokenScopes(), Rate: rate, RetryAfterSeconds: 12}, nil
	}
	who, scope, _ := strings.Cut(strings.TrimPrefix(secret, "lm_"), "_")
	u, ok := f[who]
	if !ok {
		return auth.TokenAuth{}, errs.E(errs.KindUnauthenticated, "API token invalid, expired or revoked")
	}
	return auth.TokenAuth{User: u, TokenID: "t-" + who, Scopes: []string{scope}, Allowed: true, Rate: rate}, nil
}

const secret = "0123456789abcdef0123456789abcdef"

func newApp(t *testing.T, secure bool) (*fiber.App, *identity.Keys) {
	t.Helper()
	until := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	users := fakeAuth{
		"user": {ID: "u1", Role: auth.RoleUser, Status: auth.StatusActive},
		"mod":  {ID: "m1", Role: auth.RoleModerator, Status: auth.StatusActive},
		"sa":   {ID: "s1", Role: auth.RoleSuperAdmin, Status: auth.StatusActive},
		"ban":  {ID: "b1", Role: auth.RoleModerator, Status: auth.StatusBanned},
		"sus":  {ID: "x1", Role: auth.RoleUser, Status: auth.StatusSuspended, TimeoutUntil: &until},
	}
	keys := testenv.Keys(t, identity.Gateway)
	g := NewGate(users, keys, clientip.NewResolver(nil), clientip.NewKeyer(secret), secure)
	s := server.New(server.Options{Name: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TracerProvider: noop.NewTracerProvider()})
	app := s.App()
	linkKeys := testenv.Keys(t, "link")
	app.Use(SameSite("https://lnk.example:443"))
	echo := func(c *fiber.Ctx) error {
		tok, err := identity.TokenFor(c.UserContext(), "link")
		if err != nil {
			return err
		}
		caller, err := linkKeys.Verify(tok)
		if err != nil {
			return err
		}
		return c.SendString(caller.UserID + "|" + caller.Role + "|" + caller.IPHash[:8] + "|" + caller.TokenID)
	}
	app.Get("/user", g.Require(auth.RoleUser, false), echo)
	app.Get("/mod", g.Require(auth.RoleModerator, false), echo)
	app.Get("/super", g.Require(auth.RoleSuperAdmin, false), echo)
	app.Get("/me", g.Require(auth.RoleUser, true), echo)
	app.Post("/write", g.Optional(), echo)
	app.Post("/create", g.Admit(Rule{Scope: auth.ScopeLinksWrite}), echo)
	app.Get("/read", g.Admit(Rule{MinRole: auth.RoleUser, Scope: auth.ScopeLinksRead}), echo)
	app.Get("/modscoped", g.Admit(Rule{MinRole: auth.RoleModerator, Scope: auth.ScopeLinksRead}), echo)
	app.Post("/api/auth/login", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Post("/login", func(c *fiber.Ctx) error { g.SetCookie(c, "tok", time.Now().Add(time.Hour)); return nil })
	app.Post("/logout", func(c *fiber.Ctx) error { g.ClearCookie(c); return nil })
	return app, keys
}

func TestGates(t *testing.T) {
	app, _ := newApp(t, false)
	statuses := map[string]map[string]int{ // cookie → path → status
		"":       {"/user": 401, "/mod": 401, "/super": 401, "/me": 401},
		"forged": {"/user": 401, "/mod": 401, "/super": 401, "/me": 401},
		"user":   {"/user": 200, "/mod": 403, "/super": 403, "/me": 200},
		"mod":    {"/user": 200, "/mod": 200, "/super": 403, "/me": 200},
		"sa":     {"/user": 200, "/mod": 200, "/super": 200, "/me": 200},
		"ban":    {"/user": 403, "/mod": 403, "/super": 403, "/me": 200},
		"sus":    {"/user": 403, "/mod": 403, "/super": 403, "/me": 200},
	}
	for cookie, paths := range statuses {
		for path, want := range paths {
			req := httptest.NewRequest("GET", path, nil)
			if cookie != "" {
				req.Header.Set("Cookie", CookieName+"="+cookie)
			}
			resp, _ := app.Test(req, -1)
			if resp.StatusCode != want {
				t.Errorf("cookie %q %s: %d, want %d", cookie, path, resp.StatusCode, want)
			}
		}
	}
	req := httptest.NewRequest("GET", "/mod", nil)
	req.Header.Set("Cookie", CookieName+"=mod")
	resp, _ := app.Test(req, -1)
	body, _ := io.ReadAll(resp.Body)
	wantKey := clientip.NewKeyer(secret).Key(netip.MustParseAddr("0.0.0.0"))[:8]
	if string(body) != "m1|moderator|"+wantKey+"|" {
		t.Fatalf("the internal token must carry the user, role and IP hash: %q", body)
	}
}

func TestOptionalAndSameSite(t *testing.T) {
	app, _ := newApp(t, false)
	cases := []struct {
		name, cookie, origin, fetchSite string
		want                            int
		body                            string
	}{
		{"anonymous", "", "", "", 200, "|anonymous|"},
		{"signed in", "user", "", "", 200, "u1|user|"},
		{"bad cookie is 401, not anonymous", "forged", "", "", 401, ""},
		{"banned cannot write", "ban", "", "", 403, ""},
		{"cross-site fetch with cookie", "user", "", "cross-site", 403, ""},
		{"foreign origin with cookie", "user", "https://evil.example", "", 403, ""},
		{"null origin with cookie", "user", "null", "", 403, ""},
		{"own origin", "user", "https://lnk.example", "same-origin", 200, "u1|user|"},
		{"own origin, other spelling", "user", "HTTPS://LNK.example:443", "same-origin", 200, "u1|user|"},
		{"sibling origin", "user", "https://app.lnk.example", "same-site", 403, ""},
		{"cross-site without cookie is anonymous and fine", "", "https://evil.example", "cross-site", 200, "|anonymous|"},
	}
	for _, tc := range cases {
		req := httptest.NewRequest("POST", "/write", strings.NewReader("{}"))
		if tc.cookie != "" {
			req.Header.Set("Cookie", CookieName+"="+tc.cookie)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.fetchSite != "" {
			req.Header.Set("Sec-Fetch-Site", tc.fetchSite)
		}
		resp, _ := app.Test(req, -1)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.want || (tc.body != "" && !strings.HasPrefix(string(body), tc.body)) {
			t.Errorf("%s: %d %q", tc.name, resp.StatusCode, body)
		}
	}
}

// A login form posted from another site must not sign the victim in, cookie or not.
func TestLoginFromAnotherSiteRefused(t *testing.T) {
	app, _ := newApp(t, false)
	for _, h := range []map[string]string{{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
		req := httptest.NewRequest("POST", "/api/auth/login", strings.NewReader("{}"))
		for k, v := range h {
			req.Header.Set(k, v)
		}
		if resp, _ := app.Test(req, -1); resp.StatusCode != 403 {
			t.Errorf("%v: %d", h, resp.StatusCode)
		}
	}
	// Writing the path in capitals must not dodge the check.
	req := httptest.NewRequest("POST", "/API/AUTH/LOGIN", strings.NewReader("{}"))
	req.Header.Set("Origin", "https://evil.example")
	if resp, _ := app.Test(req, -1); resp.StatusCode == 200 {
		t.Error("cross-site login accepted under a capitalised path")
	}
	req = httptest.NewRequest("POST", "/api/auth/login", strings.NewReader("{}"))
	if resp, _ := app.Test(req, -1); resp.StatusCode != 200 {
		t.Errorf("non-browser login: %d", resp.StatusCode)
	}
}

func TestCookieAttributes(t *testing.T) {
	for _, secure := range []bool{false, true} {
		app, _ := newApp(t, secure)
		resp, _ := app.Test(httptest.NewRequest("POST", "/login", nil), -1)
		set := resp.Header.Get("Set-Cookie")
		for _, part := range []string{"go_session=tok", "Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=3"} {
			if !strings.Contains(set, part) {
				t.Errorf("Set-Cookie %q lacks %q", set, part)
			}
		}
		if strings.Contains(set, "Secure") != secure {
			t.Errorf("Set-Cookie %q, secure=%v", set, secure)
		}
		resp, _ = app.Test(httptest.NewRequest("POST", "/logout", nil), -1)
		if set := resp.Header.Get("Set-Cookie"); !strings.HasPrefix(set, "go_session=;") || !strings.Contains(set, "Max-Age=0") {
			t.Errorf("clearing cookie: %q", set)
		}
	}
}

// A token decides when the request carries one: its scope must be the route's, its owner
// neither banned nor suspended, its window not spent; routes without a scope refuse tokens;
// every answer to a token request carries its window's fields.
func TestTokenGate(t *testing.T) {
	app, _ := newApp(t, false)
	cases := []struct {
		name, method, path, auth, cookie, origin string
		want                                     int
		body                                     string
	}{
		{"scoped write", "POST", "/create", "Bearer lm_user_links:write", "", "", 200, "u1|user|"},
		{"scheme in any case", "POST", "/create", "bearer lm_user_links:write", "", "", 200, "u1|user|"},
		{"scoped read", "GET", "/read", "Bearer lm_user_links:read", "", "", 200, "u1|user|"},
		{"token lacks scope", "GET", "/read", "Bearer lm_user_links:write", "", "", 403, "token lacks scope links:read"},
		{"route refuses tokens", "GET", "/user", "Bearer lm_user_links:read", "", "", 403, "API tokens are not accepted on this route"},
		{"route refuses tokens even with a cookie", "GET", "/me", "Bearer lm_user_links:read", "user", "", 403, "not accepted"},
		{"token decides over a cookie", "POST", "/create", "Bearer lm_user_links:write", "mod", "", 200, "u1|user|"},
		{"unknown token", "POST", "/create", "Bearer lm_nobody_links:write", "", "", 401, "API token invalid"},
		{"not a token", "POST", "/create", "Bearer abc", "", "", 401, "API token invalid"},
		{"other scheme", "POST", "/create", "Basic dTpw", "", "", 401, "Authorization must be Bearer"},
		{"empty bearer", "POST", "/create", "Bearer ", "", "", 401, "Authorization must be Bearer"},
		{"banned owner", "POST", "/create", "Bearer lm_ban_links:write", "", "", 403, "account is banned"},
		{"suspended owner", "POST", "/create", "Bearer lm_sus_links:write", "", "", 403, "account is suspended until"},
		{"role still counts", "GET", "/modscoped", "Bearer lm_user_links:read", "", "", 403, "moderator role required"},
		{"moderator's token", "GET", "/modscoped", "Bearer lm_mod_links:read", "", "", 200, "m1|moderator|"},
		{"spent window", "POST", "/create", "Bearer lm_spent", "", "", 429, "API token rate limit exceeded"},
		{"no same-origin check for tokens", "POST", "/create", "Bearer lm_user_links:write", "user", "https://evil.example", 200, "u1|user|"},
	}
	for _, tc := range cases {
		var body io.Reader
		if tc.method == "POST" {
			body = strings.NewReader("{}")
		}
		req := httptest.NewRequest(tc.method, tc.path, body)
		req.Header.Set("Authorization", tc.auth)
		if tc.cookie != "" {
			req.Header.Set("Cookie", CookieName+"="+tc.cookie)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.want || !strings.Contains(string(got), tc.body) {
			t.Errorf("%s: %d %q, want %d with %q", tc.name, resp.StatusCode, got, tc.want, tc.body)
		}
		if tc.want == 200 && !strings.Contains(string(got), "|t-") {
			t.Errorf("%s: the internal token must name the API token: %q", tc.name, got)
		}
		validated := tc.want == 200 || tc.want == 429 || strings.Contains(tc.body, "lacks") || strings.Contains(tc.body, "account is") || strings.Contains(tc.body, "role required")
		policy, state := resp.Header.Get(ratelimit.HeaderPolicy), resp.Header.Get(ratelimit.HeaderState)
		if validated && (policy != `"token";q=600;w=60` || !strings.HasPrefix(state, `"token";r=`)) {
			t.Errorf("%s: rate headers %q / %q", tc.name, policy, state)
		}
		if !validated && (policy != "" || state != "") {
			t.Errorf("%s: rate headers without a validated token: %q / %q", tc.name, policy, state)
		}
		if tc.want == 429 && resp.Header.Get("Retry-After") != "12" {
			t.Errorf("%s: Retry-After %q", tc.name, resp.Header.Get("Retry-After"))
		}
	}
}
