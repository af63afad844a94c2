package drills

import (
	"context"
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
	rep := newReport(t)
	svcs := bench.Services
	anon := map[string]string{"X-Forwarded-For": "203.0.113.40"}
	code := shorten(t, svcs.GatewayURL, "https://93.184.216.34/killed", anon)
	used := 1
	for _, name := range []string{"quota", "auth", "moderation", "analytics", "link"} {
		if s, _ := send(t, svcs.GatewayURL, "GET", "/"+code, "", browser); s != 302 {
			t.Fatalf("before killing %s: redirect %d", name, s)
		}
		killed := time.Now()
		svcs.KillService(name)
		redirect := "redirect while " + name + " is down"
		for range 20 {
			rep.send(t, redirect, svcs.GatewayURL, "GET", "/"+code, "", browser)
		}
		s, b := rep.send(t, "shorten while "+name+" is down", svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/while-down"}`, anon)
		start := time.Now()
		if err := svcs.RestartService(ctx, name); err != nil {
			t.Fatal(err)
		}
		rep.down(name, time.Since(killed))
		rep.recovered(name, time.Since(start))
		if failed, how := rep.other(redirect, 302); failed != 0 {
			t.Errorf("%d redirects failed while %s was down: %s", failed, name, how)
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
		if s, b := rep.send(t, "shorten after the drills", svcs.GatewayURL, "POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/after%d"}`, i), anon); s != 201 {
			t.Fatalf("creation %d of 10 after the drills: %d %s", i+1, s, b)
		}
	}
	if s, _ := rep.send(t, "shorten after the drills", svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/over"}`, anon); s != 429 {
		t.Errorf("the 11th creation answered %d, want 429", s)
	}
}
