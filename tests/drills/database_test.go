package drills

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDatabasePaused: PostgreSQL under the MongoDB wire server stalls for 10 s. Warm
// redirects keep answering from the gateways' caches; writes answer 503 in the envelope,
// never 500; every service recovers by itself. A registration that timed out during the
// stall is retried with its Idempotency-Key afterwards and answers the one account — which
// may have been stored after its caller was told 503.
func TestDatabasePaused(t *testing.T) {
	svcs := bench.Services
	gateways := []string{svcs.GatewayURL, svcs.URLs["gateway-2"]}
	anon := map[string]string{"X-Forwarded-For": "203.0.113.20"}
	status, body := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/paused"}`, anon)
	if status != 201 {
		t.Fatalf("shorten: %d %s", status, body)
	}
	var link struct {
		Code string `json:"short_code"`
	}
	_ = json.Unmarshal(body, &link)
	browser := map[string]string{"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"}
	for _, gw := range gateways {
		if status, _ := send(t, gw, "GET", "/"+link.Code, "", browser); status != 302 {
			t.Fatalf("warm-up on %s: %d", gw, status)
		}
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

	var redirected, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if s, _ := send(t, gateways[i], "GET", "/"+link.Code, "", browser); s == 302 {
					redirected.Add(1)
				} else {
					failed.Add(1)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	key := map[string]string{"X-Forwarded-For": "203.0.113.21", "Idempotency-Key": "drill-register-1"}
	reg := `{"email":"paused@drill.example","password":"s3cret-passphrase","first_name":"Ada","last_name":"Lovelace"}`
	writes := map[string][2]any{}
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
			s, b := send(t, svcs.GatewayURL, "POST", w[0], w[1], h)
			mu.Lock()
			writes[name] = [2]any{s, fmt.Sprintf("%s after %s", strings.TrimSpace(string(b)), time.Since(start).Round(100*time.Millisecond))}
			mu.Unlock()
		})
	}
	wwg.Wait()
	time.Sleep(time.Until(paused.Add(10 * time.Second)))
	resume()
	back := time.Now()
	close(stop)
	wg.Wait()
	t.Logf("10 s stall: %d warm redirects answered 302, %d otherwise; writes answered %v", redirected.Load(), failed.Load(), writes)
	if failed.Load() != 0 {
		t.Errorf("%d warm redirects failed during the stall", failed.Load())
	}
	for name, w := range writes {
		if w[0] != 503 || !strings.HasPrefix(w[1].(string), `{"error":"`) {
			t.Errorf("%s during the stall answered %v %v, want 503 in the envelope", name, w[0], w[1])
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
	t.Logf("every service ready %s after the stall", time.Since(back).Round(100*time.Millisecond))
	if s, b := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/after"}`, map[string]string{"X-Forwarded-For": "203.0.113.22"}); s != 201 {
		t.Errorf("creation after the stall: %d %s", s, b)
	}
	// The registration retried with its key: one account, whether or not the first attempt
	// was stored late.
	s, b := send(t, svcs.GatewayURL, "POST", "/api/auth/register", reg, key)
	if s != 201 {
		t.Fatalf("registration retried with its key: %d %s", s, b)
	}
	if s, b := send(t, svcs.GatewayURL, "POST", "/api/auth/register", reg, map[string]string{"X-Forwarded-For": "203.0.113.23"}); s != 409 {
		t.Errorf("registration without the key after the retry: %d %s, want 409", s, b)
	}
}
