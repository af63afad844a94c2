package e2e

import (
	"fmt"
	"testing"
	"time"
)

// The rank rules as a table: actor role × target role × action, through the gateway.
func TestUserActionRanks(t *testing.T) {
	root := admin(t)
	rootID := meID(t, root)
	mod := moderator(t, root)
	actions := []struct{ path, body string }{
		{"timeout", `{"duration_seconds":60,"reason":"cool down"}`},
		{"ban", `{"reason":"spam"}`},
		{"unban", ""},
	}
	for _, tc := range []struct {
		actor, target string
		status        int
		msg           string
	}{
		{"moderator", "user", 200, ""},
		{"moderator", "moderator", 403, "you cannot act on a user of equal or higher rank"},
		{"moderator", "super_admin", 403, "you cannot act on a user of equal or higher rank"},
		{"super_admin", "user", 200, ""},
		{"super_admin", "moderator", 200, ""},
		{"user", "user", 403, "moderator role required"},
		{"moderator", "self", 400, "you cannot act on your own account"},
		{"super_admin", "self", 400, "you cannot act on your own account"},
		{"moderator", "unknown", 404, "user not found"},
	} {
		for _, a := range actions {
			actor := map[string]string{"moderator": mod.cookie, "super_admin": root, "user": register(t).cookie}[tc.actor]
			var target string
			switch tc.target {
			case "user":
				target = register(t).id
			case "moderator":
				target = moderator(t, root).id
			case "super_admin":
				target = rootID
			case "self":
				target = meID(t, actor)
			case "unknown":
				target = "000000000000000000000000"
			}
			name := fmt.Sprintf("%s %s %s", tc.actor, a.path, tc.target)
			r := as(t, actor, "POST", "/api/admin/users/"+target+"/"+a.path, a.body)
			if tc.status != 200 {
				if r.status != tc.status {
					t.Errorf("%s: %d %s, want %d", name, r.status, r.body, tc.status)
				} else {
					r.wantError(t, tc.status, tc.msg)
				}
				continue
			}
			u, _ := r.object(t)["user"].(map[string]any)
			want := map[string]string{"timeout": "suspended", "ban": "banned", "unban": "active"}[a.path]
			if r.status != 200 || u["status"] != want || u["id"] != target {
				t.Errorf("%s: %d %s, want status %s", name, r.status, r.body, want)
			}
		}
	}
}

// Timeout, ban with deactivated links and unban through the gateway: the account is refused
// on its very next request, its links answer 403 on both replicas within a second and stay
// so after the unban, and every action is in the audit log.
func TestBanAndTimeout(t *testing.T) {
	root := admin(t)
	mod := moderator(t, root)
	u := register(t)
	var codes []string
	for i := range 2 {
		r := as(t, u.cookie, "POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/ban%d"}`, i))
		codes = append(codes, r.object(t)["short_code"].(string))
		eventuallyOn(t, gw2, codes[i], 302)
	}
	for _, tc := range []struct{ body, msg string }{
		{`{"duration_seconds":29,"reason":"x"}`, "duration_seconds must be between 30 and 604800"},
		{`{"duration_seconds":604801,"reason":"x"}`, "duration_seconds must be between 30 and 604800"},
		{`{"reason":"x"}`, "duration_seconds is required"},
		{`{"duration_seconds":60}`, "reason is required"},
	} {
		as(t, mod.cookie, "POST", "/api/admin/users/"+u.id+"/timeout", tc.body).wantError(t, 400, tc.msg)
	}
	r := as(t, mod.cookie, "POST", "/api/admin/users/"+u.id+"/timeout", `{"duration_seconds":3600,"reason":"cool down"}`)
	if got, _ := r.object(t)["user"].(map[string]any); r.status != 200 || got["status"] != "suspended" || got["timeout_reason"] != "cool down" || got["timeout_until"] == nil {
		t.Fatalf("timeout: %d %s", r.status, r.body)
	}
	if r := as(t, u.cookie, "GET", "/api/user/dashboard", ""); r.status != 403 {
		t.Fatalf("a suspended user's next request: %d %s", r.status, r.body)
	}

	r = as(t, mod.cookie, "POST", "/api/admin/users/"+u.id+"/ban", `{"reason":"spam","deactivate_links":true}`)
	got := r.object(t)
	if user, _ := got["user"].(map[string]any); r.status != 200 || user["status"] != "banned" || user["ban_reason"] != "spam" || got["links_disabled"] != float64(2) {
		t.Fatalf("ban: %d %s", r.status, r.body)
	}
	as(t, u.cookie, "GET", "/api/user/links", "").wantError(t, 403, "account is banned")
	for _, code := range codes {
		eventuallyOn(t, gw, code, 403)
		eventuallyOn(t, gw2, code, 403)
	}
	as(t, mod.cookie, "POST", "/api/admin/users/"+u.id+"/ban", `{}`).wantError(t, 400, "reason is required")

	list := as(t, mod.cookie, "GET", "/api/admin/users?status=banned&q="+u.email, "").object(t)
	if users, _ := list["users"].([]any); list["total"] != float64(1) || len(users) != 1 || users[0].(map[string]any)["id"] != u.id {
		t.Fatalf("banned users matching %s: %v", u.email, list)
	}
	if list := as(t, mod.cookie, "GET", "/api/admin/users?status=active&q="+u.email, "").object(t); list["total"] != float64(0) {
		t.Fatalf("a banned user listed active: %v", list)
	}
	as(t, mod.cookie, "GET", "/api/admin/users?role=owner", "").wantError(t, 400, "role must be one of user, moderator, super_admin")
	if list := as(t, mod.cookie, "GET", "/api/admin/users?q=.*", "").object(t); list["total"] != float64(0) {
		t.Fatalf("q is a pattern: %v", list["total"])
	}

	r = as(t, mod.cookie, "POST", "/api/admin/users/"+u.id+"/unban", "")
	if got, _ := r.object(t)["user"].(map[string]any); r.status != 200 || got["status"] != "active" || got["timeout_until"] != nil {
		t.Fatalf("unban: %d %s", r.status, r.body)
	}
	if r := as(t, u.cookie, "GET", "/api/user/links", ""); r.status != 200 {
		t.Fatalf("after the unban: %d %s", r.status, r.body)
	}
	eventuallyOn(t, gw, codes[0], 403) // links stay as they are

	var actions []string
	for _, e := range auditEntries(t, root, "actor_id="+mod.id, u.id) {
		actions = append(actions, e["action"].(string))
	}
	if fmt.Sprint(actions) != "[user.unban user.ban user.timeout]" {
		t.Fatalf("audit of %s: %v", u.id, actions)
	}
	if e := auditEntries(t, root, "action=user.role", mod.id); len(e) != 1 || e[0]["detail"].(map[string]any)["to"] != "moderator" {
		t.Fatalf("role change entry: %v", e)
	}
}

// The overview through the gateway: every counter there, and moving with what it counts.
func TestAdminOverview(t *testing.T) {
	root := admin(t)
	overview := func() map[string]any {
		r := as(t, root, "GET", "/api/admin/overview", "")
		if r.status != 200 {
			t.Fatalf("overview: %d %s", r.status, r.body)
		}
		return r.object(t)
	}
	// What earlier tests changed is counted first: the counters hold still.
	var before response
	waitFor(t, "the counters settled", func() bool {
		first := overview()
		time.Sleep(1500 * time.Millisecond)
		before = as(t, root, "GET", "/api/admin/overview", "")
		return fmt.Sprint(first) == fmt.Sprint(before.object(t))
	})
	owner := register(t)
	code := as(t, owner.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/counted"}`).object(t)["short_code"].(string)
	do(t, "POST", "/api/reports", `{"short_code":"`+code+`","reason":"other"}`, newClientIP())
	b := before.object(t)
	var after map[string]any
	waitFor(t, "the new link counted", func() bool {
		after = as(t, root, "GET", "/api/admin/overview", "").object(t)
		links, _ := after["links"].(map[string]any)
		was, _ := b["links"].(map[string]any)
		return links["active"] != was["active"]
	})
	shape := map[string][]string{"users": {"total", "active", "suspended", "banned"}, "links": {"total", "active", "expired", "disabled", "deleted"},
		"clicks": {"total", "last_24h"}, "reports": {"pending"}, "permanent_requests": {"pending"}}
	num := func(m map[string]any, group, key string) float64 {
		g, _ := m[group].(map[string]any)
		n, ok := g[key].(float64)
		if !ok {
			t.Fatalf("overview without %s.%s: %v", group, key, m)
		}
		return n
	}
	for group, keys := range shape {
		if g, _ := after[group].(map[string]any); len(g) != len(keys) {
			t.Fatalf("overview %s: %v, want the keys %v", group, after[group], keys)
		}
		for _, k := range keys {
			num(after, group, k)
		}
	}
	if len(after) != len(shape) {
		t.Fatalf("overview groups: %v", after)
	}
	for _, c := range []struct{ group, key string }{{"users", "total"}, {"users", "active"}, {"links", "total"}, {"links", "active"}, {"reports", "pending"}} {
		if got := num(after, c.group, c.key) - num(b, c.group, c.key); got < 1 {
			t.Errorf("%s.%s moved by %v, want at least 1", c.group, c.key, got)
		}
	}
	if num(after, "links", "total") != num(after, "links", "active")+num(after, "links", "expired")+num(after, "links", "disabled")+num(after, "links", "deleted") {
		t.Errorf("links don't add up: %v", after["links"])
	}
	as(t, owner.cookie, "GET", "/api/admin/overview", "").wantError(t, 403, "moderator role required")
}
