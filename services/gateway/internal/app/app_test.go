package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/identity"
	pkgservice "github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/gateway/internal/app"
	"github.com/linkmesh/linkmesh/services/gateway/internal/config"
)

// peers fakes the link and auth services behind the gateway: it checks every internal token
// and records who the gateway said was calling, and what it asked.
type peers struct {
	*httptest.Server
	t        testing.TB
	mu       sync.Mutex
	callers  map[string]identity.Caller // path → caller of the last call
	bodies   map[string]string          // path → body of the last call
	queries  map[string]string          // path → raw query of the last call
	resolves atomic.Int32
	dest     atomic.Value // destination the resolve answers
	linkDown atomic.Bool
}

func newPeers(t *testing.T) *peers {
	p := &peers{t: t, callers: map[string]identity.Caller{}, bodies: map[string]string{}, queries: map[string]string{}}
	p.dest.Store("https://93.184.216.34/first")
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *peers) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/readyz" {
		if p.linkDown.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	// Each call must carry a token addressed to the service its path belongs to.
	caller, err := testenv.PeerCaller(p.t, r)
	if err != nil {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"internal token invalid"}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.callers[r.URL.Path], p.bodies[r.URL.Path], p.queries[r.URL.Path] = caller, string(body), r.URL.RawQuery
	p.mu.Unlock()
	now := time.Now().UTC()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/internal/links":
		w.WriteHeader(http.StatusCreated)
		writeJSON(w, link.Created{ShortCode: "abc1234", ShortURL: "http://localhost:8080/abc1234", DestinationURL: "https://93.184.216.34/x", CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
	case r.URL.Path == "/internal/links/abc1234/resolve":
		p.resolves.Add(1)
		writeJSON(w, link.Resolved{ShortCode: "abc1234", DestinationURL: p.dest.Load().(string), Status: link.StatusActive, ExpiresAt: now.Add(time.Hour)})
	case r.URL.Path == "/internal/links/abc1234/info":
		writeJSON(w, link.Info{ShortCode: "abc1234", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour)})
	case r.URL.Path == "/internal/auth/sessions/validate":
		var req auth.TokenRequest
		_ = json.Unmarshal(body, &req)
		role := map[string]string{"user-token": auth.RoleUser, "super-token": auth.RoleSuperAdmin}[req.Token]
		if role == "" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"session expired or invalid"}`)
			return
		}
		writeJSON(w, auth.UserResponse{User: auth.User{ID: "id-" + role, Role: role, Status: auth.StatusActive, QuotaLimit: 7}})
	case r.URL.Path == "/internal/auth/users/u2/role":
		writeJSON(w, auth.UserResponse{User: auth.User{ID: "u2", Role: auth.RoleModerator, Status: auth.StatusActive}})
	case r.URL.Path == "/internal/auth/login-records":
		writeJSON(w, auth.LoginRecords{Records: []auth.LoginRecord{}, Page: 2, PageSize: 20})
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"route not found"}`)
	}
}

func writeJSON(w io.Writer, v any) { _ = json.NewEncoder(w).Encode(v) }

func (p *peers) last(path string) (identity.Caller, string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.callers[path], p.bodies[path], p.queries[path]
}

type gateway struct {
	*testenv.Booted
	peers *peers
	cfg   *config.Config
}

// boot starts the gateway in-process through the production boot path against the real
// Redis, with the fake link and auth services as its peers.
func boot(t *testing.T) *gateway {
	t.Helper()
	p := newPeers(t)
	cfg := &config.Config{}
	b := testenv.Boot(t, pkgservice.For(pkgconfig.Gateway, cfg, app.Wire), func() {
		cfg.LinkURL, cfg.AuthURL = p.URL, p.URL
		cfg.IdentitySecret = "component-identity-secret-0123456789"
	})
	return &gateway{Booted: b, peers: p, cfg: cfg}
}

// send is a public request with an optional session cookie.
func (g *gateway) send(t *testing.T, method, path, cookie, body string) testenv.Response {
	t.Helper()
	req, err := http.NewRequest(method, g.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "gateway-component/1.0")
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "go_session", Value: cookie})
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return testenv.Response{Status: resp.StatusCode, Header: resp.Header, Body: string(data)}
}

// The gateway forwards a creation with who is calling and nothing else of the business:
// an anonymous caller travels with the identity key of its address, a signed-in one as
// itself; quota and rules are the link service's.
func TestShortenForwardsTheCaller(t *testing.T) {
	g := boot(t)
	r := g.send(t, "POST", "/api/links/shorten", "", `{"url":"https://93.184.216.34/x","expiration_days":3,"custom_code":"mine"}`)
	if r.Status != 201 || !strings.Contains(r.Body, `"short_code":"abc1234"`) {
		t.Fatalf("anonymous shorten: %d %s", r.Status, r.Body)
	}
	caller, body, _ := g.peers.last("/internal/links")
	if !caller.IsAnonymous() || len(caller.IPHash) != 64 || caller.UserAgent != "gateway-component/1.0" {
		t.Fatalf("anonymous caller as forwarded: %+v", caller)
	}
	var req link.CreateRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil || req.URL != "https://93.184.216.34/x" || *req.ExpirationDays != 3 || *req.CustomCode != "mine" {
		t.Fatalf("forwarded body %s", body)
	}

	if r := g.send(t, "POST", "/api/links/shorten", "user-token", `{"url":"https://93.184.216.34/y"}`); r.Status != 201 {
		t.Fatalf("signed-in shorten: %d %s", r.Status, r.Body)
	}
	caller, _, _ = g.peers.last("/internal/links")
	if caller.UserID != "id-user" || caller.Role != auth.RoleUser || len(caller.IPHash) != 64 || caller.QuotaLimit != 7 {
		t.Fatalf("signed-in caller as forwarded: %+v", caller)
	}
	g.send(t, "POST", "/api/links/shorten", "forged", `{"url":"https://93.184.216.34/y"}`).WantFailure(t, 401, "session expired or invalid")
	g.send(t, "POST", "/api/links/shorten", "", `{"url":`).WantFailure(t, 400, "request body is not valid JSON")
}

func TestInfoRoleAndLoginRecordsPassThrough(t *testing.T) {
	g := boot(t)
	if r := g.send(t, "GET", "/api/links/abc1234/info", "", ""); r.Status != 200 || !strings.Contains(r.Body, `"short_code":"abc1234"`) {
		t.Fatalf("info: %d %s", r.Status, r.Body)
	}
	g.send(t, "GET", "/api/links/no.such/info", "", "").WantFailure(t, 404, link.MsgNotFound)

	r := g.send(t, "POST", "/api/admin/users/u2/role", "super-token", `{"role":"moderator"}`)
	if r.Status != 200 || !strings.Contains(r.Body, `"role":"moderator"`) {
		t.Fatalf("role: %d %s", r.Status, r.Body)
	}
	caller, body, _ := g.peers.last("/internal/auth/users/u2/role")
	if caller.UserID != "id-super_admin" || !strings.Contains(body, `"role":"moderator"`) {
		t.Fatalf("role call: %+v %s", caller, body)
	}
	g.send(t, "POST", "/api/admin/users/u2/role", "user-token", `{"role":"moderator"}`).WantFailure(t, 403, "super_admin role required")

	r = g.send(t, "GET", "/api/admin/login-records?user_id=u9&page=2&secret=x", "super-token", "")
	if r.Status != 200 {
		t.Fatalf("login records: %d %s", r.Status, r.Body)
	}
	if _, _, q := g.peers.last("/internal/auth/login-records"); q != "page=2&user_id=u9" {
		t.Fatalf("login records query forwarded as %q", q)
	}
}

// Redirects are served from the gateway's cache, and a change broadcast on the real Redis
// drops the cached entry within the contract's second.
func TestRedirectCacheAndInvalidation(t *testing.T) {
	g := boot(t)
	for range 3 {
		r := g.send(t, "GET", "/abc1234", "", "")
		if r.Status != 302 || r.Header.Get("Location") != "https://93.184.216.34/first" || r.Header.Get("Cache-Control") != "private, no-store" {
			t.Fatalf("redirect: %d %v", r.Status, r.Header)
		}
	}
	if n := g.peers.resolves.Load(); n != 1 {
		t.Fatalf("%d resolves for three visits, want 1", n)
	}
	g.peers.dest.Store("https://93.184.216.34/second")
	rdb := testenv.Redis(t)
	if err := rdb.Publish(context.Background(), link.InvalidationChannel, "abc1234").Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for g.send(t, "GET", "/abc1234", "", "").Header.Get("Location") != "https://93.184.216.34/second" {
		if time.Now().After(deadline) {
			t.Fatal("the invalidation did not reach the cache within 1s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHealthFollowsPeers(t *testing.T) {
	g := boot(t)
	if r := g.send(t, "GET", "/api/health", "", ""); r.Status != 200 || r.Body != `{"status":"ok"}` {
		t.Fatalf("health: %d %s", r.Status, r.Body)
	}
	g.peers.linkDown.Store(true)
	r := g.send(t, "GET", "/api/health", "", "")
	if r.Status != 503 || !strings.Contains(r.Body, "service unavailable") {
		t.Fatalf("health with a peer down: %d %s", r.Status, r.Body)
	}
	if r := g.send(t, "GET", "/readyz", "", ""); r.Status != 200 {
		t.Fatalf("readyz (Redis only): %d %s", r.Status, r.Body)
	}
}
