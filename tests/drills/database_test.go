package drills

import (
	"context"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDatabasePaused: PostgreSQL under the MongoDB wire server stalls for 10 s (every
// query waits, as on a stalled database machine). See databaseOutage for what must hold.
func TestDatabasePaused(t *testing.T) {
	resumed := false
	resume := func() error {
		if resumed {
			return nil
		}
		resumed = true
		return bench.Datastores.ResumePostgres()
	}
	t.Cleanup(func() { _ = resume() })
	databaseOutage(t, "stall", "203.0.113.20", bench.Datastores.PausePostgres, resume)
}

// TestDatabaseRestarted: the MongoDB wire server goes away for 10 s as with the loss of its
// machine — PostgreSQL shut down at once, without a checkpoint, and FerretDB stopped, every
// connection refused — and both start again on their ports, PostgreSQL recovering from its
// crash. See databaseOutage for what must hold.
func TestDatabaseRestarted(t *testing.T) {
	down := false
	t.Cleanup(func() {
		if down { // a failed restart: the drills after this one need the datastores
			_ = bench.Datastores.StartMongoAgain(context.Background())
		}
	})
	databaseOutage(t, "restart", "203.0.113.30",
		func() error { bench.Datastores.CrashMongo(); down = true; return nil },
		func() error {
			if err := bench.Datastores.StartMongoAgain(context.Background()); err != nil {
				return err
			}
			down = false
			return nil
		})
}

// databaseOutage takes the MongoDB wire server away for 10 s with begin and brings it back
// with end. Warm redirects keep answering from the gateways' caches; writes answer 503 in
// the envelope, never 500; every service recovers by itself, without a restart. A
// registration that failed during the outage is retried with its Idempotency-Key afterwards
// and answers the one account — which may have been stored after its caller was told 503.
// ip is the first of ten client addresses of the drill's own.
func databaseOutage(t *testing.T, kind, ip string, begin, end func() error) {
	rep := newReport(t)
	svcs := bench.Services
	gateways := []string{svcs.GatewayURL, svcs.URLs["gateway-2"]}
	client := func(i int) string {
		a := netip.MustParseAddr(ip)
		for range i {
			a = a.Next()
		}
		return a.String()
	}
	code := shorten(t, svcs.GatewayURL, "https://93.184.216.34/"+kind, map[string]string{"X-Forwarded-For": client(0)})
	for _, gw := range gateways {
		warmUp(t, gw, code)
	}

	outage := time.Now()
	if err := begin(); err != nil {
		t.Fatal(err)
	}
	stop := follow(t, rep, "redirect", code, gateways, 2, 20*time.Millisecond)
	defer stop()
	key := map[string]string{"X-Forwarded-For": client(1), "Idempotency-Key": "drill-register-" + kind}
	reg := `{"email":"` + kind + `@drill.example","password":"s3cret-passphrase","first_name":"Ada","last_name":"Lovelace"}`
	type answer struct {
		status int
		body   string
		took   time.Duration
	}
	writes := map[string]answer{}
	var mu sync.Mutex
	var wwg sync.WaitGroup
	for name, w := range map[string][2]string{
		"register": {"/api/auth/register", reg},
		"shorten":  {"/api/links/shorten", `{"url":"https://93.184.216.34/during-` + kind + `"}`},
	} {
		wwg.Go(func() {
			h := map[string]string{"X-Forwarded-For": client(2)}
			if name == "register" {
				h = key
			}
			start := time.Now()
			s, b := rep.send(t, name+" during the "+kind, svcs.GatewayURL, "POST", w[0], w[1], h)
			took := time.Since(start)
			rep.figure(name+" answered after", took)
			mu.Lock()
			writes[name] = answer{s, strings.TrimSpace(string(b)), took}
			mu.Unlock()
		})
	}
	wwg.Wait()
	time.Sleep(time.Until(outage.Add(10 * time.Second)))
	if err := end(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	rep.down("mongodb", back.Sub(outage))
	stop()
	if failed, how := rep.other("redirect", 302); failed != 0 {
		t.Errorf("%d warm redirects failed during the %s: %s", failed, kind, how)
	}
	for name, w := range writes {
		if w.status != 503 || !strings.HasPrefix(w.body, `{"error":"`) {
			t.Errorf("%s during the %s answered %d %s after %s, want 503 in the envelope", name, kind, w.status, w.body, w.took.Round(100*time.Millisecond))
		}
	}

	// Every service recovers by itself.
	for name, base := range svcs.URLs {
		for {
			if s, _ := send(t, base, "GET", "/readyz", "", nil); s == 200 {
				break
			}
			if time.Since(back) > 30*time.Second {
				t.Fatalf("%s not ready 30 s after the %s", name, kind)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	rep.recovered("every service ready", time.Since(back))
	// Ready is not enough: reads that go down to MongoDB on connections pooled before the
	// outage answer too, every one of them.
	for i := range 20 {
		if s, b := rep.send(t, "info after the "+kind, gateways[i%2], "GET", "/api/links/"+code+"/info", "", nil); s != 200 {
			t.Errorf("link info after the %s: %d %s", kind, s, b)
		}
	}
	if s, b := rep.send(t, "shorten after the "+kind, svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/after"}`, map[string]string{"X-Forwarded-For": client(2)}); s != 201 {
		t.Errorf("creation after the %s: %d %s", kind, s, b)
	}
	// The registration retried with its key: one account, whether or not the first attempt
	// was stored late.
	s, b := rep.send(t, "register retried with its key", svcs.GatewayURL, "POST", "/api/auth/register", reg, key)
	if s != 201 {
		t.Fatalf("registration retried with its key: %d %s", s, b)
	}
	if s, b := rep.send(t, "register again without the key", svcs.GatewayURL, "POST", "/api/auth/register", reg, map[string]string{"X-Forwarded-For": client(3)}); s != 409 {
		t.Errorf("registration without the key after the retry: %d %s, want 409", s, b)
	}
}
