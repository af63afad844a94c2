package e2e

import (
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/services/auth/authtest"
)

// protectedRoute is one route of the specification's user and admin tables.
type protectedRoute struct {
	method, path, body string
	minRole            string // user, moderator or super_admin
	// built is the status a caller with enough rank gets from the route's real handler
	// (unknown ids and codes: 404).
	built int
}

var protectedRoutes = []protectedRoute{
	{"GET", "/api/user/dashboard", "", "user", 200},
	{"GET", "/api/user/links", "", "user", 200},
	{"GET", "/api/user/links/abc1234/analytics", "", "user", 404},
	{"POST", "/api/user/links/abc1234/renew", "{}", "user", 404}, // nobody's link: 404, no oracle
	{"POST", "/api/user/links/abc1234/request-permanent", "{}", "user", 404},
	{"DELETE", "/api/user/links/abc1234", "", "user", 404},
	{"PATCH", "/api/user/links/abc1234", `{"destination_url":"https://93.184.216.34/m"}`, "user", 404},
	{"GET", "/api/user/links/abc1234/analytics/export", "", "user", 404},
	{"POST", "/api/links/bulk", `{"links":[{"url":"https://93.184.216.34/m"}]}`, "user", 200},
	{"POST", "/api/user/webhooks", `{"url":"https://93.184.216.34/m","events":["link.created"]}`, "user", 201},
	{"GET", "/api/user/webhooks", "", "user", 200},
	{"DELETE", "/api/user/webhooks/w1", "", "user", 404},
	{"POST", "/api/user/webhooks/w1/test", "", "user", 404},
	{"GET", "/api/user/webhooks/w1/deliveries", "", "user", 404},
	{"POST", "/api/user/tokens", `{"name":"matrix","scopes":["links:read"]}`, "user", 201},
	{"GET", "/api/user/tokens", "", "user", 200},
	{"DELETE", "/api/user/tokens/t1", "", "user", 404},
	{"GET", "/api/user/sessions", "", "user", 200},
	{"GET", "/api/user/export", "", "user", 200},
	// Without a password: allowed callers meet the 400, and nobody's account goes.
	{"DELETE", "/api/user/account", "{}", "user", 400},
	{"DELETE", "/api/user/sessions/s1", "", "user", 404},
	{"GET", "/api/admin/overview", "", "moderator", 200},
	{"GET", "/api/admin/users", "", "moderator", 200},
	{"POST", "/api/admin/users/nobody/timeout", `{"duration_seconds":60,"reason":"x"}`, "moderator", 404},
	{"POST", "/api/admin/users/nobody/ban", `{"reason":"x"}`, "moderator", 404},
	{"POST", "/api/admin/users/nobody/unban", "", "moderator", 404},
	{"POST", "/api/admin/users/nobody/role", `{"role":"user"}`, "super_admin", 404},
	{"GET", "/api/admin/links", "", "moderator", 200},
	{"POST", "/api/admin/links/abc1234/disable", "{}", "moderator", 404},
	{"POST", "/api/admin/links/abc1234/enable", "", "moderator", 404},
	{"DELETE", "/api/admin/links/abc1234", "", "moderator", 404},
	{"GET", "/api/admin/reports", "", "moderator", 200},
	{"POST", "/api/admin/reports/r1/resolve", `{"action":"dismiss"}`, "moderator", 404},
	{"GET", "/api/admin/permanent-requests", "", "moderator", 200},
	{"POST", "/api/admin/permanent-requests/p1/resolve", `{"action":"reject"}`, "moderator", 404},
	{"GET", "/api/admin/login-records", "", "super_admin", 200},
	{"GET", "/api/admin/audit-log", "", "super_admin", 200},
}

var rank = map[string]int{"user": 1, "moderator": 2, "super_admin": 3}

// TestAuthorizationMatrix runs every protected route for every kind of caller.
func TestAuthorizationMatrix(t *testing.T) {
	root := admin(t)
	revoked := register(t)
	as(t, revoked.cookie, "POST", "/api/auth/logout", "")
	banned := register(t)
	setUser(t, banned.id, authtest.Restriction{Status: "banned"})
	suspended := register(t)
	setUser(t, suspended.id, authtest.Restriction{TimeoutUntil: ptr(time.Now().Add(time.Hour).UTC())})
	user := register(t)
	mod := register(t)
	if r := as(t, root, "POST", "/api/admin/users/"+mod.id+"/role", `{"role":"moderator"}`); r.status != 200 {
		t.Fatalf("promote moderator: %d %s", r.status, r.body)
	}

	callers := []struct {
		name, cookie string
		role         string // "" for callers that must be turned away before any role check
		status       int    // the status every protected route gives them, when role is ""
	}{
		{"no cookie", "", "", 401},
		{"forged cookie", "Zm9yZ2VkLXRva2VuLXRoYXQtd2FzLW5ldmVyLWlzc3VlZA", "", 401},
		{"revoked cookie", revoked.cookie, "", 401},
		{"banned user", banned.cookie, "", 403},
		{"suspended user", suspended.cookie, "", 403},
		{"user", user.cookie, "user", 0},
		{"moderator", mod.cookie, "moderator", 0},
		{"super admin", root, "super_admin", 0},
	}
	for _, c := range callers {
		for _, rt := range protectedRoutes {
			want := c.status
			if c.role != "" {
				switch {
				case rank[c.role] < rank[rt.minRole]:
					want = 403
				default:
					want = rt.built
				}
			}
			r := as(t, c.cookie, rt.method, rt.path, rt.body)
			if r.status != want {
				t.Errorf("%s → %s %s: %d, want %d (%s)", c.name, rt.method, rt.path, r.status, want, r.body)
				continue
			}
			if m := r.object(t); want >= 400 {
				if msg, _ := m["error"].(string); msg == "" || len(m) != 1 {
					t.Errorf("%s → %s %s: not the error envelope: %s", c.name, rt.method, rt.path, r.body)
				}
			}
		}
		// me works for every signed-in account, restricted ones included.
		wantMe := 200
		if c.status == 401 {
			wantMe = 401
		}
		if r := as(t, c.cookie, "GET", "/api/auth/me", ""); r.status != wantMe {
			t.Errorf("%s → GET /api/auth/me: %d, want %d", c.name, r.status, wantMe)
		}
	}
}
