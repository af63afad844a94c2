package e2e

import (
	"strings"
	"testing"
	"time"
)

// A registered user's links: the list with its filters and paging, renewal and soft deletion,
// each as the contract says, and another user's link is a 404 on every route.
func TestOwnerLinks(t *testing.T) {
	a, b := register(t), register(t)
	create := func(cookie, body string) string {
		t.Helper()
		r := as(t, cookie, "POST", "/api/links/shorten", body)
		if r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		return r.object(t)["short_code"].(string)
	}
	first := create(a.cookie, `{"url":"https://93.184.216.34/owner/x.*y","expiration_days":5}`)
	second := create(a.cookie, `{"url":"https://93.184.216.34/owner/(b)"}`)
	theirs := create(b.cookie, `{"url":"https://93.184.216.34/owner/x.*y"}`)

	r := as(t, a.cookie, "GET", "/api/user/links", "")
	list := r.object(t)
	links, _ := list["links"].([]any)
	if r.status != 200 || len(links) != 2 || list["total"] != float64(2) || list["page"] != float64(1) || list["page_size"] != float64(20) {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	newest := links[0].(map[string]any)
	if newest["short_code"] != second || newest["status"] != "ACTIVE" || newest["expired"] != false || newest["auto_renew"] != false ||
		newest["click_count"] != float64(0) || newest["deleted_at"] != nil || !strings.HasSuffix(newest["short_url"].(string), "/"+second) {
		t.Fatalf("newest link: %v", newest)
	}
	if _, has := newest["owner_id"]; has {
		t.Fatalf("the owner view carries owner_id: %v", newest)
	}
	for _, tc := range []struct{ query, want string }{
		{"?q=.*", first}, {"?q=(b)", second}, {"?status=active&page_size=1&page=2", first},
	} {
		r := as(t, a.cookie, "GET", "/api/user/links"+tc.query, "")
		ls, _ := r.object(t)["links"].([]any)
		if r.status != 200 || len(ls) != 1 || ls[0].(map[string]any)["short_code"] != tc.want {
			t.Errorf("list%s: %d %s, want only %s", tc.query, r.status, r.body, tc.want)
		}
	}
	for _, tc := range []struct{ query, msg string }{
		{"?status=gone", "status must be active, expired, disabled or all"},
		{"?page=0", "page must be a positive integer"},
		{"?page_size=101", "page_size must be between 1 and 100"},
	} {
		as(t, a.cookie, "GET", "/api/user/links"+tc.query, "").wantError(t, 400, tc.msg)
	}

	// Renewal: an expired link comes back with the same code, on every route at once.
	setLinkExpired(t, first)
	eventually(t, first, 410)
	eventuallyOn(t, gw2, first, 410) // the second replica has it cached too
	r = as(t, a.cookie, "POST", "/api/user/links/"+first+"/renew", `{"expiration_days":10}`)
	renewed, _ := r.object(t)["link"].(map[string]any)
	if r.status != 200 || renewed["short_code"] != first || renewed["expired"] != false {
		t.Fatalf("renew: %d %s", r.status, r.body)
	}
	expires, err := time.Parse(time.RFC3339, renewed["expires_at"].(string))
	if err != nil || expires.Sub(time.Now().AddDate(0, 0, 10)).Abs() > time.Minute {
		t.Fatalf("renewed until %v, want about now + 10 days", renewed["expires_at"])
	}
	eventually(t, first, 302)
	eventuallyOn(t, gw2, first, 302) // within a second on every replica
	if r := as(t, a.cookie, "POST", "/api/user/links/"+second+"/renew", ""); r.status != 200 {
		t.Fatalf("renew without a body: %d %s", r.status, r.body)
	}
	as(t, a.cookie, "POST", "/api/user/links/"+first+"/renew", `{"expiration_days":366}`).
		wantError(t, 400, "expiration_days must be between 1 and 365")

	// Another user's link does not exist for the caller.
	as(t, a.cookie, "POST", "/api/user/links/"+theirs+"/renew", "").wantError(t, 404, "short link not found")
	as(t, a.cookie, "DELETE", "/api/user/links/"+theirs, "").wantError(t, 404, "short link not found")

	// Soft deletion: 404 on the redirect and on info within a second, gone from the list, and
	// a second delete is a 404.
	r = as(t, a.cookie, "DELETE", "/api/user/links/"+first, "")
	if r.status != 200 || string(r.body) != `{"status":"deleted"}` {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	eventually(t, first, 404)
	eventuallyOn(t, gw2, first, 404)
	do(t, "GET", "/api/links/"+first+"/info", "", "").wantError(t, 404, "short link not found")
	as(t, a.cookie, "DELETE", "/api/user/links/"+first, "").wantError(t, 404, "short link not found")
	as(t, a.cookie, "POST", "/api/user/links/"+first+"/renew", "").wantError(t, 404, "short link not found")
	if r := as(t, a.cookie, "GET", "/api/user/links", ""); r.object(t)["total"] != float64(1) {
		t.Fatalf("list after delete: %s", r.body)
	}
	if r := do(t, "GET", "/"+theirs, "", ""); r.status != 302 {
		t.Fatalf("the other user's link was touched: %d", r.status)
	}
}
