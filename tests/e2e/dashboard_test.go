package e2e

import (
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/services/link/linktest"
)

// The dashboard as the contract's object: counts by state, the quota as of now, the newest
// five links; soft-deleted links count nowhere.
func TestDashboard(t *testing.T) {
	a := register(t)
	empty := as(t, a.cookie, "GET", "/api/user/dashboard", "")
	q, _ := empty.object(t)["quota"].(map[string]any)
	if empty.status != 200 || empty.object(t)["total_links"] != float64(0) || q["used"] != float64(0) || q["resets_at"] != nil ||
		q["limit"] != float64(100) || q["remaining"] != float64(100) || q["window_days"] != float64(30) {
		t.Fatalf("empty dashboard: %d %s", empty.status, empty.body)
	}
	var codes []string
	for i := range 7 {
		r := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/dash`+itoa(i)+`"}`)
		if r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		codes = append(codes, r.object(t)["short_code"].(string))
	}
	setLinkExpired(t, codes[0])
	setLink(t, codes[1], linktest.Change{Status: ptr("DISABLED")})
	if r := as(t, a.cookie, "DELETE", "/api/user/links/"+codes[2], ""); r.status != 200 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	r := as(t, a.cookie, "GET", "/api/user/dashboard", "")
	d := r.object(t)
	q, _ = d["quota"].(map[string]any)
	recent, _ := d["recent_links"].([]any)
	if r.status != 200 || d["total_links"] != float64(6) || d["active_links"] != float64(4) || d["expired_links"] != float64(1) ||
		d["disabled_links"] != float64(1) || d["total_clicks"] != float64(0) || len(recent) != 5 ||
		recent[0].(map[string]any)["short_code"] != codes[6] || q["used"] != float64(7) || q["remaining"] != float64(93) {
		t.Fatalf("dashboard: %d %s", r.status, r.body)
	}
	resets, err := time.Parse(time.RFC3339, q["resets_at"].(string))
	if err != nil || resets.Sub(time.Now().Add(720*time.Hour)).Abs() > 5*time.Minute {
		t.Fatalf("resets_at %v, want about 30 days from the first creation", q["resets_at"])
	}
}
