package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// TestServicesKilled: each service the redirect path does not need is killed (SIGKILL) and
// restarted while a warm link is followed. Redirects never fail; creation answers 503 in the
// envelope while the link or quota service is down and takes no unit for it; after each
// restart the service answers as before.
func TestServicesKilled(t *testing.T) {
	ctx := context.Background()
	svcs := bench.Services
	browser := map[string]string{"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"}
	anon := map[string]string{"X-Forwarded-For": "203.0.113.40"}
	status, body := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/killed"}`, anon)
	if status != 201 {
		t.Fatalf("shorten: %d %s", status, body)
	}
	var link struct {
		Code string `json:"short_code"`
	}
	if err := json.Unmarshal(body, &link); err != nil || link.Code == "" {
		t.Fatalf("shorten answered %s", body)
	}
	code := link.Code
	used := 1
	for _, name := range []string{"quota", "auth", "moderation", "analytics", "link"} {
		if s, _ := send(t, svcs.GatewayURL, "GET", "/"+code, "", browser); s != 302 {
			t.Fatalf("before killing %s: redirect %d", name, s)
		}
		svcs.KillService(name)
		failed := 0
		for range 20 {
			if s, _ := send(t, svcs.GatewayURL, "GET", "/"+code, "", browser); s != 302 {
				failed++
			}
		}
		s, b := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/while-down"}`, anon)
		start := time.Now()
		if err := svcs.RestartService(ctx, name); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s killed: %d of 20 redirects failed; creation answered %d %s; back in %s", name, failed, s, b, time.Since(start).Round(10*time.Millisecond))
		if failed != 0 {
			t.Errorf("%d redirects failed while %s was down", failed, name)
		}
		switch name {
		case "quota", "link":
			if s != 503 || string(b) != fmt.Sprintf(`{"error":"%s service unavailable"}`, name) {
				t.Errorf("creation with %s down answered %d %s, want 503 %q", name, s, b, name+" service unavailable")
			}
		default:
			if s != 201 {
				t.Errorf("creation with %s down answered %d %s, want 201", name, s, b)
			} else {
				used++
			}
		}
	}
	// Only the creations that succeeded took units: the rest of the 10 are still there.
	for i := used; i < 10; i++ {
		if s, b := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/after%d"}`, i), anon); s != 201 {
			t.Fatalf("creation %d of 10 after the drills: %d %s", i+1, s, b)
		}
	}
	if s, _ := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/over"}`, anon); s != 429 {
		t.Errorf("the 11th creation answered %d, want 429", s)
	}
}
