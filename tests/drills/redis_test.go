// Package drills runs fault drills against a whole system of its own, whose datastores it
// may take down: real processes, real datastores, load running.
package drills

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
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

// TestRedisRestart: Redis is killed and comes back empty after 2 s while visitors keep
// following a warm link on two gateways. Redirects keep answering; quotas are what they
// were (the durable record in MongoDB); a delete after the restart reaches both gateways
// within 1 s (pub/sub resubscribed by itself); the click stream's consumer resumes, and
// every visit answered 302 is stored once, but for the clicks still on the stream, unread or
// unacknowledged, when Redis died.
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
	time.Sleep(time.Second)
	// What a Redis killed now takes with it is what the stream holds for the analytics group
	// undelivered, or delivered and unacknowledged (production Redis keeps it: appendonly,
	// see deploy/SCALING.md). Writes are paused for the reading, so it is exact at the kill.
	unread := clicksOnTheStream(ctx, t, warm)
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

// analyticsGroup is the analytics service's consumer group on the clicks stream.
const analyticsGroup = "analytics"

// clicksOnTheStream pauses every write to Redis — the gateways' additions to the clicks
// stream, the analytics consumer's reads and acknowledgements wait — and counts code's
// clicks in the entries the analytics group has not been delivered, or has not yet
// acknowledged. The pause lasts until Redis is killed, 5 s at most.
func clicksOnTheStream(ctx context.Context, t *testing.T, code string) int64 {
	t.Helper()
	rdb := bench.Redis()
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", 5000, "WRITE").Err(); err != nil {
		t.Fatalf("pause writes: %v", err)
	}
	groups, err := rdb.XInfoGroups(ctx, analytics.Stream).Result()
	if err != nil {
		t.Fatalf("the clicks stream's groups: %v", err)
	}
	last := ""
	for _, g := range groups {
		if g.Name == analyticsGroup {
			last = g.LastDeliveredID
		}
	}
	if last == "" {
		t.Fatalf("no analytics group on the clicks stream: %+v", groups)
	}
	pending, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: analytics.Stream, Group: analyticsGroup, Start: "-", End: "+", Count: 1 << 20}).Result()
	if err != nil {
		t.Fatalf("the analytics group's pending entries: %v", err)
	}
	// Undelivered: every entry after the group's last delivered one. Unacknowledged: the
	// pending ones, which XPENDING lists in the stream's order.
	entries, err := rdb.XRange(ctx, analytics.Stream, "("+last, "+").Result()
	if err != nil {
		t.Fatalf("the clicks stream after %s: %v", last, err)
	}
	if len(pending) > 0 {
		delivered, err := rdb.XRange(ctx, analytics.Stream, pending[0].ID, last).Result()
		if err != nil {
			t.Fatalf("the clicks stream from %s to %s: %v", pending[0].ID, last, err)
		}
		unacked := map[string]bool{}
		for _, p := range pending {
			unacked[p.ID] = true
		}
		for _, e := range delivered {
			if unacked[e.ID] {
				entries = append(entries, e)
			}
		}
	}
	var n int64
	for _, e := range entries {
		values := map[string]string{}
		for k, v := range e.Values {
			values[k] = fmt.Sprint(v)
		}
		clicks, err := analytics.ClicksFromValues(values)
		if err != nil {
			t.Fatalf("stream entry %s: %v", e.ID, err)
		}
		for _, c := range clicks {
			if c.ShortCode == code {
				n++
			}
		}
	}
	return n
}
