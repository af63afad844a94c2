package drills

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDatabasePaused: PostgreSQL under the MongoDB wire server stalls for 10 s. Warm
// redirects keep answering from the gateways' caches; writes answer 503 in the envelope,
// never 500; every service recovers by itself. A registration that timed out during the
// stall is retried with its Idempotency-Key afterwards and answers the one account — which
// may have been stored after its caller was told 503.
func TestDatabasePaused(t *testing.T) {
	rep := newReport(t)
	svcs := bench.Services
	gateways := []string{svcs.GatewayURL, svcs.URLs["gateway-2"]}
	code := shorten(t, svcs.GatewayURL, "https://93.184.216.34/paused", map[string]string{"X-Forwarded-For": "203.0.113.20"})
	for _, gw := range gateways {
		warmUp(t, gw, code)
	}

	if err := bench.Datastores.PausePostgres(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := bench.Datastores.ResumePostgres(); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(resume)

	stop := follow(t, rep, "redirect", code, gateways, 2, 20*time.Millisecond)
	defer stop()
	key := map[string]string{"X-Forwarded-For": "203.0.113.21", "Idempotency-Key": "drill-register-1"}
	reg := `{"email":"paused@drill.example","password":"s3cret-passphrase","first_name":"Ada","last_name":"Lovelace"}`
	type answer struct {
		status int
		body   string
		took   time.Duration
	}
	writes := map[string]answer{}
	var mu sync.Mutex
	var wwg sync.WaitGroup
	for name, w := range map[string][3]string{
		"register": {"/api/auth/register", reg, "203.0.113.21"},
		"shorten":  {"/api/links/shorten", `{"url":"https://93.184.216.34/during"}`, "203.0.113.22"},
	} {
		wwg.Go(func() {
			h := map[string]string{"X-Forwarded-For": w[2]}
			if name == "register" {
				h = key
			}
			start := time.Now()
			s, b := rep.send(t, name+" during the stall", svcs.GatewayURL, "POST", w[0], w[1], h)
			took := time.Since(start)
			rep.figure(name+" answered after", took)
			mu.Lock()
			writes[name] = answer{s, strings.TrimSpace(string(b)), took}
			mu.Unlock()
		})
	}
	wwg.Wait()
	time.Sleep(time.Until(paused.Add(10 * time.Second)))
	resume()
	back := time.Now()
	rep.down("postgres", back.Sub(paused))
	stop()
	if failed, how := rep.other("redirect", 302); failed != 0 {
		t.Errorf("%d warm redirects failed during the stall: %s", failed, how)
	}
	for name, w := range writes {
		if w.status != 503 || !strings.HasPrefix(w.body, `{"error":"`) {
			t.Errorf("%s during the stall answered %d %s after %s, want 503 in the envelope", name, w.status, w.body, w.took.Round(100*time.Millisecond))
		}
	}

	// Every service recovers by itself.
	for name, base := range svcs.URLs {
		for {
			if s, _ := send(t, base, "GET", "/readyz", "", nil); s == 200 {
				break
			}
			if time.Since(back) > 30*time.Second {
				t.Fatalf("%s not ready 30 s after the stall", name)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	rep.recovered("every service ready", time.Since(back))
	if s, b := rep.send(t, "shorten after the stall", svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/after"}`, map[string]string{"X-Forwarded-For": "203.0.113.22"}); s != 201 {
		t.Errorf("creation after the stall: %d %s", s, b)
	}
	// The registration retried with its key: one account, whether or not the first attempt
	// was stored late.
	s, b := rep.send(t, "register retried with its key", svcs.GatewayURL, "POST", "/api/auth/register", reg, key)
	if s != 201 {
		t.Fatalf("registration retried with its key: %d %s", s, b)
	}
	if s, b := rep.send(t, "register again without the key", svcs.GatewayURL, "POST", "/api/auth/register", reg, map[string]string{"X-Forwarded-For": "203.0.113.23"}); s != 409 {
		t.Errorf("registration without the key after the retry: %d %s, want 409", s, b)
	}
}
