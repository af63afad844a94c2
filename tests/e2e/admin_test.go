package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// meID is the user id of the account holding cookie.
func meID(t *testing.T, cookie string) string {
	t.Helper()
	u, _ := as(t, cookie, "GET", "/api/auth/me", "").object(t)["user"].(map[string]any)
	id, _ := u["id"].(string)
	if id == "" {
		t.Fatal("no id from /api/auth/me")
	}
	return id
}

// moderator registers an account and makes it a moderator.
func moderator(t *testing.T, root string) account {
	t.Helper()
	m := register(t)
	if r := as(t, root, "POST", "/api/admin/users/"+m.id+"/role", `{"role":"moderator"}`); r.status != 200 {
		t.Fatalf("promote moderator: %d %s", r.status, r.body)
	}
	return m
}

// auditEntries lists the audit log entries for target, newest first.
func auditEntries(t *testing.T, root, query, target string) []map[string]any {
	t.Helper()
	r := as(t, root, "GET", "/api/admin/audit-log?page_size=100&"+query, "")
	if r.status != 200 {
		t.Fatalf("audit log: %d %s", r.status, r.body)
	}
	var out []map[string]any
	entries, _ := r.object(t)["entries"].([]any)
	for _, e := range entries {
		if m := e.(map[string]any); m["target_id"] == target {
			out = append(out, m)
		}
	}
	return out
}

// linkOf is the admin view of code, soft-deleted included; nil when none.
func linkOf(t *testing.T, root, code string) map[string]any {
	t.Helper()
	r := as(t, root, "GET", "/api/admin/links?include_deleted=true&page_size=100&q="+code, "")
	links, _ := r.object(t)["links"].([]any)
	for _, l := range links {
		if m := l.(map[string]any); m["short_code"] == code {
			return m
		}
	}
	return nil
}

// Moderators' link actions through the gateway: everyone's list with owners, disable and
// enable reaching both gateway replicas within a second, each audited.
func TestAdminLinkActions(t *testing.T) {
	root := admin(t)
	mod := moderator(t, root)
	owner, other := register(t), register(t)
	var codes []string
	for i := range 3 {
		r := as(t, owner.cookie, "POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/adm%d"}`, i))
		codes = append(codes, r.object(t)["short_code"].(string))
	}
	as(t, other.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/theirs"}`)
	if r := as(t, owner.cookie, "DELETE", "/api/user/links/"+codes[2], ""); r.status != 200 {
		t.Fatalf("soft delete: %d", r.status)
	}

	r := as(t, mod.cookie, "GET", "/api/admin/links?owner_id="+owner.id, "")
	list := r.object(t)
	links, _ := list["links"].([]any)
	if r.status != 200 || list["total"] != float64(2) || len(links) != 2 {
		t.Fatalf("owner's live links: %d %s", r.status, r.body)
	}
	first := links[0].(map[string]any)
	if first["short_code"] != codes[1] || first["owner_id"] != owner.id || first["click_count"] != float64(0) || first["status"] != "ACTIVE" {
		t.Fatalf("admin view: %v", first)
	}
	if r := as(t, mod.cookie, "GET", "/api/admin/links?owner_id="+owner.id+"&include_deleted=true", ""); r.object(t)["total"] != float64(3) {
		t.Fatalf("with soft-deleted: %s", r.body)
	}
	as(t, mod.cookie, "GET", "/api/admin/links?include_deleted=yes", "").wantError(t, 400, "include_deleted must be true or false")
	as(t, mod.cookie, "GET", "/api/admin/links?status=gone", "").wantError(t, 400, "status must be active, expired, disabled or all")
	as(t, owner.cookie, "GET", "/api/admin/links", "").wantError(t, 403, "moderator role required")

	code := codes[0]
	eventuallyOn(t, gw, code, 302)
	eventuallyOn(t, gw2, code, 302) // both replicas hold it
	r = as(t, mod.cookie, "POST", "/api/admin/links/"+code+"/disable", `{"reason":"phishing kit"}`)
	got, _ := r.object(t)["link"].(map[string]any)
	if r.status != 200 || got["status"] != "DISABLED" || got["owner_id"] != owner.id {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	eventuallyOn(t, gw, code, 403).wantError(t, 403, "short link has been disabled")
	eventuallyOn(t, gw2, code, 403)
	as(t, mod.cookie, "POST", "/api/admin/links/"+codes[2]+"/disable", "").wantError(t, 404, "short link not found")
	as(t, mod.cookie, "POST", "/api/admin/links/"+code+"/disable", `{"reason":`).wantError(t, 400, "request body is not valid JSON")

	r = as(t, mod.cookie, "POST", "/api/admin/links/"+code+"/enable", "")
	if got, _ := r.object(t)["link"].(map[string]any); r.status != 200 || got["status"] != "ACTIVE" {
		t.Fatalf("enable: %d %s", r.status, r.body)
	}
	eventuallyOn(t, gw, code, 302)
	eventuallyOn(t, gw2, code, 302)

	linkID, _ := linkOf(t, root, code)["id"].(string)
	entries := auditEntries(t, root, "actor_id="+mod.id, linkID)
	if len(entries) != 2 || entries[0]["action"] != "link.enable" || entries[1]["action"] != "link.disable" {
		t.Fatalf("audit entries: %v", entries)
	}
	e := entries[1]
	detail, _ := e["detail"].(map[string]any)
	if e["actor_id"] != mod.id || e["target_type"] != "link" || detail["reason"] != "phishing kit" || detail["short_code"] != code ||
		len(e["ip_hash"].(string)) < 16 || e["created_at"] == nil {
		t.Fatalf("disable entry: %v", e)
	}
}

// Reports through the gateway: validation, an unknown code, the hourly window, the queue,
// a resolution that disables the link, twice → 409, and the audit entry.
func TestReports(t *testing.T) {
	root := admin(t)
	mod := moderator(t, root)
	owner := register(t)
	code := as(t, owner.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/reported"}`).object(t)["short_code"].(string)
	ip := newClientIP()
	do(t, "POST", "/api/reports", `{"short_code":"`+code+`","reason":"rude"}`, ip).
		wantError(t, 400, "reason must be one of spam, phishing, malware, illegal, other")
	do(t, "POST", "/api/reports", `{"short_code":"`+code+`","reason":"spam","details":"`+strings.Repeat("x", 2001)+`"}`, ip).
		wantError(t, 400, "details must be valid text of at most 2000 characters")
	do(t, "POST", "/api/reports", `{"short_code":"zzzzzzz","reason":"spam"}`, ip).wantError(t, 404, "short link not found")
	do(t, "POST", "/api/reports", `{"reason":"spam"}`, ip).wantError(t, 400, "short_code is required")

	for i := range 20 {
		r := do(t, "POST", "/api/reports", fmt.Sprintf(`{"short_code":"%s","reason":"phishing","details":"report %d"}`, code, i), ip)
		if r.status != 201 || string(r.body) != `{"status":"report_submitted"}` {
			t.Fatalf("report %d: %d %s", i, r.status, r.body)
		}
	}
	r := do(t, "POST", "/api/reports", `{"short_code":"`+code+`","reason":"spam"}`, ip)
	r.wantError(t, 429, "too many reports")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	if r := do(t, "POST", "/api/reports", `{"short_code":"`+code+`","reason":"malware"}`, newClientIP()); r.status != 201 {
		t.Fatalf("another reporter: %d %s", r.status, r.body)
	}

	r = as(t, mod.cookie, "GET", "/api/admin/reports?page_size=100", "")
	var mine []map[string]any
	reports, _ := r.object(t)["reports"].([]any)
	for _, x := range reports {
		if m := x.(map[string]any); m["short_code"] == code {
			mine = append(mine, m)
		}
	}
	if r.status != 200 || len(mine) != 21 || mine[0]["reason"] != "malware" || mine[0]["status"] != "pending" ||
		mine[0]["resolved_at"] != nil || mine[0]["resolved_by"] != nil {
		t.Fatalf("pending reports of %s: %d of %d: %v", code, len(mine), len(reports), mine[:min(len(mine), 1)])
	}
	as(t, mod.cookie, "GET", "/api/admin/reports?status=closed", "").wantError(t, 400, "status must be pending, resolved, dismissed or all")
	id, other := mine[0]["id"].(string), mine[1]["id"].(string)

	eventuallyOn(t, gw2, code, 302)
	as(t, mod.cookie, "POST", "/api/admin/reports/"+id+"/resolve", `{"action":"dismiss","disable_link":true}`).
		wantError(t, 400, "disable_link applies only to resolve")
	r = as(t, mod.cookie, "POST", "/api/admin/reports/"+id+"/resolve", `{"action":"resolve","note":"confirmed","disable_link":true}`)
	got, _ := r.object(t)["report"].(map[string]any)
	if r.status != 200 || got["status"] != "resolved" || got["resolved_by"] != mod.id || got["resolution_note"] != "confirmed" || got["resolved_at"] == nil {
		t.Fatalf("resolve: %d %s", r.status, r.body)
	}
	eventuallyOn(t, gw, code, 403)
	eventuallyOn(t, gw2, code, 403)
	as(t, mod.cookie, "POST", "/api/admin/reports/"+id+"/resolve", `{"action":"dismiss"}`).wantError(t, 409, "report already resolved")
	if r := as(t, mod.cookie, "POST", "/api/admin/reports/"+other+"/resolve", `{"action":"dismiss"}`); r.object(t)["report"].(map[string]any)["status"] != "dismissed" {
		t.Fatalf("dismiss: %s", r.body)
	}
	as(t, mod.cookie, "POST", "/api/admin/reports/nope/resolve", `{"action":"dismiss"}`).wantError(t, 404, "report not found")
	if e := auditEntries(t, root, "action=report.resolve", id); len(e) != 1 || e[0]["actor_id"] != mod.id {
		t.Fatalf("resolution entry: %v", e)
	}
}

// A permanent delete whose analytics step fails (the analytics process is down) leaves the
// link answering 404; the next run finishes it: the link, its clicks and its reports are gone
// for good, with one audit entry, and deleting again is 404.
func TestPermanentDeleteHealsAfterACrash(t *testing.T) {
	ctx := context.Background()
	root := admin(t)
	mod := moderator(t, root)
	owner := register(t)
	code := as(t, owner.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/doomed"}`).object(t)["short_code"].(string)
	linkID := linkOf(t, root, code)["id"].(string)
	for range 3 {
		doWith(t, "GET", "/"+code, "", map[string]string{"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"})
	}
	if r := do(t, "POST", "/api/reports", `{"short_code":"`+code+`","reason":"spam"}`, newClientIP()); r.status != 201 {
		t.Fatalf("report: %d %s", r.status, r.body)
	}
	clicks := serviceDB(t, "analytics").Collection("link_clicks")
	waitFor(t, "clicks stored", func() bool {
		n, _ := clicks.CountDocuments(ctx, bson.D{{Key: "link_id", Value: linkID}})
		return n == 3
	})

	services.StopService("analytics")
	t.Cleanup(func() { _ = services.RestartService(ctx, "analytics") })
	r := as(t, mod.cookie, "DELETE", "/api/admin/links/"+code, "")
	if r.status != 503 {
		t.Fatalf("delete with analytics down: %d %s", r.status, r.body)
	}
	eventually(t, code, 404)
	do(t, "GET", "/api/links/"+code+"/info", "", "").wantError(t, 404, "short link not found")
	if err := services.RestartService(ctx, "analytics"); err != nil {
		t.Fatal(err)
	}
	if r := as(t, mod.cookie, "DELETE", "/api/admin/links/"+code, ""); r.status != 200 || string(r.body) != `{"status":"deleted"}` {
		t.Fatalf("delete again: %d %s", r.status, r.body)
	}
	if n, _ := clicks.CountDocuments(ctx, bson.D{{Key: "link_id", Value: linkID}}); n != 0 {
		t.Fatalf("%d clicks left", n)
	}
	if n, _ := serviceDB(t, "link").Collection("links").CountDocuments(ctx, bson.D{{Key: "_id", Value: linkID}}); n != 0 {
		t.Fatal("the link document is still stored")
	}
	if n, _ := serviceDB(t, "moderation").Collection("abuse_reports").CountDocuments(ctx, bson.D{{Key: "link_id", Value: linkID}}); n != 0 {
		t.Fatalf("%d reports left", n)
	}
	if e := auditEntries(t, root, "action=link.delete", linkID); len(e) != 1 || e[0]["actor_id"] != mod.id {
		t.Fatalf("delete entries: %v", e)
	}
	as(t, mod.cookie, "DELETE", "/api/admin/links/"+code, "").wantError(t, 404, "short link not found")
	eventuallyOn(t, gw2, code, 404)
}

// waitFor polls cond for up to 30 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// With the audit log unreachable (the moderation process stopped), no admin action stands:
// a disable, a ban and a role change answer 503 and leave the link and the account as they
// were.
func TestUnauditedActionsDoNotStand(t *testing.T) {
	ctx := context.Background()
	root := admin(t)
	mod := moderator(t, root)
	u := register(t)
	code := as(t, u.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/audited"}`).object(t)["short_code"].(string)
	eventually(t, code, 302)

	services.StopService("moderation")
	t.Cleanup(func() { _ = services.RestartService(ctx, "moderation") })
	for _, c := range []struct{ cookie, path, body string }{
		{mod.cookie, "/api/admin/links/" + code + "/disable", `{"reason":"x"}`},
		{mod.cookie, "/api/admin/users/" + u.id + "/ban", `{"reason":"x","deactivate_links":true}`},
		{root, "/api/admin/users/" + u.id + "/role", `{"role":"moderator"}`},
	} {
		if r := as(t, c.cookie, "POST", c.path, c.body); r.status != 503 {
			t.Errorf("%s without the audit log: %d %s", c.path, r.status, r.body)
		}
	}
	if err := services.RestartService(ctx, "moderation"); err != nil {
		t.Fatal(err)
	}
	eventually(t, code, 302)
	if r := as(t, u.cookie, "GET", "/api/auth/me", ""); r.status != 200 {
		t.Fatalf("me: %d", r.status)
	} else if got, _ := r.object(t)["user"].(map[string]any); got["status"] != "active" || got["role"] != "user" {
		t.Fatalf("the account after unaudited actions: %v", got)
	}
	if l := linkOf(t, root, code); l == nil || l["status"] != "ACTIVE" {
		t.Fatalf("the link after an unaudited disable: %v", l)
	}
}
