package drills

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// TestRedisAwayGatewaysStayReady: Redis is gone for 10 s (longer than the chart's readiness
// probe takes to drop a pod: two failures 5 s apart). Every /readyz of every service answers
// 200 throughout, the gateways' naming Redis unavailable, and warm links keep redirecting
// from the gateways' caches: a Redis outage must not empty the gateway Service of the very
// pods built to ride it out. linkmesh_dependency_up reports the outage and its end.
func TestRedisAwayGatewaysStayReady(t *testing.T) {
	ctx := context.Background()
	rep := newReport(t)
	svcs := bench.Services
	gateways := []string{svcs.GatewayURL, svcs.URLs["gateway-2"]}
	code := shorten(t, svcs.GatewayURL, "https://93.184.216.34/ready", map[string]string{"X-Forwarded-For": "203.0.113.80"})
	for _, gw := range gateways {
		warmUp(t, gw, code)
	}
	stop := follow(t, rep, "redirect", code, gateways, 2, 20*time.Millisecond)
	defer stop()

	restarted := make(chan error, 1)
	go func() { restarted <- bench.Datastores.RestartRedis(ctx, 10*time.Second) }()
	var polls, degraded atomic.Int64
	sawDown := false
	// Every service is asked at once, each check bounded by the service at 2 s, for 8 s.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		var wg sync.WaitGroup
		for name, base := range svcs.URLs {
			wg.Go(func() {
				status, body := send(t, base, "GET", "/readyz", "", nil)
				polls.Add(1)
				if status != 200 {
					t.Errorf("%s /readyz answered %d %s while Redis was away, want 200", name, status, body)
					return
				}
				var r struct {
					Status       string            `json:"status"`
					Dependencies map[string]string `json:"dependencies"`
				}
				if err := json.Unmarshal(body, &r); err != nil {
					t.Errorf("%s /readyz: %v: %s", name, err, body)
				}
				if r.Status == "degraded" && r.Dependencies["redis"] == "unavailable" {
					degraded.Add(1)
				}
			})
		}
		wg.Wait()
		if up, err := stack.MetricValue(ctx, svcs.MetricsURLs["gateway"], "linkmesh_dependency_up"); err == nil && up == 0 {
			sawDown = true
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	rep.figure("readiness checks during the outage", polls.Load())
	rep.figure("of them reporting Redis unavailable", degraded.Load())
	if degraded.Load() == 0 {
		t.Fatal("no /readyz reported Redis unavailable during the outage")
	}
	if !sawDown {
		t.Error("the gateway's linkmesh_dependency_up never showed Redis down")
	}
	time.Sleep(time.Second)
	stop()
	if failed, how := rep.other("redirect", 302); failed != 0 {
		t.Errorf("warm redirects failed %d times while Redis was away: %s", failed, how)
	}
	if rep.count("redirect", 302) == 0 {
		t.Fatal("no redirect answered while Redis was away")
	}
	// Back: the report says so within a few checks.
	back := time.Now()
	for {
		_, body := send(t, svcs.GatewayURL, "GET", "/readyz", "", nil)
		if string(body) == `{"dependencies":{"redis":"ok"},"status":"ok"}` {
			break
		}
		if time.Since(back) > 15*time.Second {
			t.Fatalf("the gateway still reports %s 15 s after Redis came back", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if up := gauge(t, svcs.MetricsURLs["gateway"], "linkmesh_dependency_up"); up != 1 {
		t.Errorf("gateway linkmesh_dependency_up = %v after Redis came back, want 1", up)
	}
	// The click pipeline's consumer is back on the new, empty Redis (its group made again):
	// the drills after this one read its lag.
	for {
		if _, err := stack.MetricValue(ctx, svcs.MetricsURLs["analytics"], "linkmesh_stream_lag_entries"); err == nil {
			break
		}
		if time.Since(back) > 30*time.Second {
			t.Fatal("analytics exposes no stream lag 30 s after Redis came back")
		}
		time.Sleep(200 * time.Millisecond)
	}
	rep.recovered("click pipeline reading again", time.Since(back))
}
