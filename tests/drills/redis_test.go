// Package drills runs fault drills against a whole system of its own, whose datastores it
// may take down: real processes, real datastores, load running.
package drills

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

var (
	bench  *stack.Bench
	client = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Getenv("LINKMESH_REQUIRE_INTEGRATION") == "" && os.Getenv("LINKMESH_BIN_DIR") == "" {
		fmt.Println("drills: LINKMESH_BIN_DIR not set; skipped (run `make test`)")
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	bench, err = stack.StartBench(ctx, "drills", stack.ServicesOptions{BinDir: os.Getenv("LINKMESH_BIN_DIR"), GatewayReplicas: 1, Metrics: true,
		Env: map[string]string{"LINKMESH_TRUSTED_PROXIES": "127.0.0.1/32"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "drills:", err)
		return 1
	}
	defer bench.Stop()
	return m.Run()
}

// send makes one request; a transport failure is status 0 with the error as body.
func send(t *testing.T, base, method, path, body string, header map[string]string) (int, []byte) {
	t.Helper()
	a, err := stack.Send(client, base, method, path, body, header)
	if err != nil {
		return 0, []byte(err.Error())
	}
	return a.Status, a.Body
}

// streamDelay is the longest a click answered 302 may take to reach the stream: the
// recorder takes spooled visits every 10 ms (handOff, services/gateway/internal/clicks), the
// producer writes a batch at the latest every 100 ms (FlushInterval's default, pkg/stream),
// and its pipeline to Redis may take a while on a loaded two-core machine (100 ms allowed).
const streamDelay = 10*time.Millisecond + 100*time.Millisecond + 100*time.Millisecond

// TestRedisRestart: Redis is killed and comes back empty after 2 s while visitors keep
// following a warm link on two gateways. Redirects keep answering; quotas are what they
// were (the durable record in MongoDB); a delete after the restart reaches both gateways
// within 1 s (pub/sub resubscribed by itself); the click stream's consumer resumes, and
// every visit answered 302 is stored once, but for the clicks still unread on the stream when
// Redis died.
func TestRedisRestart(t *testing.T) {
	ctx := context.Background()
	rep := newReport(t)
	svcs := bench.Services
	gateways := []string{svcs.GatewayURL, svcs.URLs["gateway-2"]}
	_, cookie := signUp(t, "drill-owner@drill.example", "203.0.113.9")
	warm, doomed := shorten(t, svcs.GatewayURL, "https://93.184.216.34/warm", cookie), shorten(t, svcs.GatewayURL, "https://93.184.216.34/doomed", cookie)
	// An anonymous client uses 6 of its 10 units before the restart.
	anon := map[string]string{"X-Forwarded-For": "203.0.113.10"}
	for i := range 6 {
		if status, body := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/anon%d"}`, i), anon); status != 201 {
			t.Fatalf("anonymous creation %d: %d %s", i, status, body)
		}
	}
	for _, gw := range gateways {
		warmUp(t, gw, warm, doomed)
	}

	// Visitors follow the warm link throughout.
	stop := follow(t, rep, "redirect", warm, gateways, 4, 10*time.Millisecond)
	defer stop()
	started := time.Now()
	time.Sleep(time.Second)
	// Clicks still on the stream, not yet read by the analytics service, go with a Redis that
	// comes back empty (production Redis keeps them: appendonly, see deploy/SCALING.md). So
	// may those the gateways wrote there from streamDelay before this reading to the kill.
	// Everything else — what the analytics service had read, what the gateways still held —
	// must be stored.
	before := rep.count("redirect", 302)
	lag, err := stack.MetricValue(ctx, svcs.MetricsURLs["analytics"], "linkmesh_stream_lag_entries")
	if err != nil {
		t.Fatalf("stream lag before the kill: %v", err)
	}
	rate := float64(before) / time.Since(started).Seconds()
	unread := int64(lag) + rep.count("redirect", 302) - before + int64(math.Ceil(rate*streamDelay.Seconds()))
	rep.figure("clicks not yet read from the stream just before the kill", lag)
	rep.figure("clicks Redis may take with it", unread)
	down := time.Now()
	if err := bench.Datastores.RestartRedis(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	rep.down("redis", time.Since(down))
	time.Sleep(3 * time.Second)

	// The quota is what MongoDB recorded: 4 more anonymous creations, then 429.
	for i := range 4 {
		if status, body := rep.send(t, "anonymous creation after the restart", svcs.GatewayURL, "POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/after%d"}`, i), anon); status != 201 {
			t.Errorf("anonymous creation %d after the restart: %d %s", i+7, status, body)
		}
	}
	if status, _ := rep.send(t, "anonymous creation after the restart", svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/over"}`, anon); status != 429 {
		t.Errorf("the 11th anonymous creation answered %d, want 429: the restart reset the quota", status)
	}

	// A delete after the restart reaches both gateways within a second.
	if status, body := send(t, svcs.GatewayURL, "DELETE", "/api/user/links/"+doomed, "", cookie); status != 200 && status != 204 {
		t.Fatalf("delete: %d %s", status, body)
	}
	deleted := time.Now()
	for _, gw := range gateways {
		for {
			status, _ := send(t, gw, "GET", "/"+doomed, "", nil)
			if status == 404 {
				break
			}
			if time.Since(deleted) > time.Second {
				t.Fatalf("%s still answers %d for a code deleted after the restart", gw, status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	rep.recovered("delete seen by both gateways", time.Since(deleted))
	time.Sleep(2 * time.Second)
	stop()
	if failed, how := rep.other("redirect", 302); failed != 0 {
		t.Errorf("warm redirects failed %d times while Redis restarted: %s", failed, how)
	}

	// Every visit answered 302 becomes one click — the warm-up's and the load's — but for
	// those Redis took with it; none twice.
	want := rep.count("redirect", 302) + int64(len(gateways))
	got := storedClicks(t, warm, want, 3*time.Minute, cookie)
	rep.clicks(warm, want, got)
	if got > want || got < want-unread {
		t.Errorf("%d visits answered 302 and %d clicks were stored; at most %d could go with Redis", want, got, unread)
	}
}
