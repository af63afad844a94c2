// Package drills runs fault drills against a whole system of its own, whose datastores it
// may take down: real processes, real datastores, load running.
package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
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
	bench, err = stack.StartBench(ctx, "drills", stack.ServicesOptions{BinDir: os.Getenv("LINKMESH_BIN_DIR"), GatewayReplicas: 1,
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
// every visit answered 302 is stored once.
func TestRedisRestart(t *testing.T) {
	ctx := context.Background()
	svcs := bench.Services
	gateways := []string{svcs.GatewayURL, svcs.URLs["gateway-2"]}
	owner, err := stack.Register(ctx, svcs.GatewayURL, "drill-owner@drill.example")
	if err != nil {
		t.Fatal(err)
	}
	cookie := map[string]string{"Cookie": "go_session=" + owner.Session, "X-Forwarded-For": "203.0.113.9"}
	newLink := func(path string) string {
		status, body := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/`+path+`"}`, cookie)
		if status != 201 {
			t.Fatalf("shorten: %d %s", status, body)
		}
		var out struct {
			Code string `json:"short_code"`
		}
		_ = json.Unmarshal(body, &out)
		return out.Code
	}
	warm, doomed := newLink("warm"), newLink("doomed")
	// An anonymous client uses 6 of its 10 units before the restart.
	anon := map[string]string{"X-Forwarded-For": "203.0.113.10"}
	for i := range 6 {
		if status, body := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/anon%d"}`, i), anon); status != 201 {
			t.Fatalf("anonymous creation %d: %d %s", i, status, body)
		}
	}
	browser := map[string]string{"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"}
	for _, gw := range gateways {
		for _, code := range []string{warm, doomed} {
			if status, _ := send(t, gw, "GET", "/"+code, "", browser); status != 302 {
				t.Fatalf("warm-up of %s on %s: %d", code, gw, status)
			}
		}
	}

	// Visitors follow the warm link throughout.
	var redirected, failed atomic.Int64
	statuses := sync.Map{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				status, _ := send(t, gateways[(i+n)%2], "GET", "/"+warm, "", browser)
				if status == 302 {
					redirected.Add(1)
				} else {
					failed.Add(1)
					v, _ := statuses.LoadOrStore(status, new(atomic.Int64))
					v.(*atomic.Int64).Add(1)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	time.Sleep(time.Second)
	down := time.Now()
	if err := bench.Datastores.RestartRedis(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	time.Sleep(3 * time.Second)

	// The quota is what MongoDB recorded: 4 more anonymous creations, then 429.
	for i := range 4 {
		if status, body := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/after%d"}`, i), anon); status != 201 {
			t.Errorf("anonymous creation %d after the restart: %d %s", i+7, status, body)
		}
	}
	if status, _ := send(t, svcs.GatewayURL, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/over"}`, anon); status != 429 {
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
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	var other []string
	statuses.Range(func(k, v any) bool {
		other = append(other, fmt.Sprintf("%v×%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	t.Logf("Redis down %s: %d redirects answered 302, %d otherwise %v", back.Sub(down).Round(time.Millisecond), redirected.Load(), failed.Load(), other)
	if failed.Load() != 0 {
		t.Errorf("warm redirects failed %d times while Redis restarted: %v", failed.Load(), other)
	}

	// Every visit answered 302 becomes exactly one click: the warm-up's and the load's.
	want := redirected.Load() + int64(len(gateways))
	deadline := time.Now().Add(3 * time.Minute)
	var got int64
	for time.Now().Before(deadline) {
		status, body := send(t, svcs.GatewayURL, "GET", "/api/user/links/"+warm+"/analytics?days=1", "", cookie)
		var a struct {
			Total int64 `json:"total_clicks"`
		}
		_ = json.Unmarshal(body, &a)
		got = a.Total
		if status == 200 && got >= want {
			break
		}
		time.Sleep(time.Second)
	}
	time.Sleep(2 * time.Second)
	t.Logf("clicks: %d visits answered 302, %d stored", want, got)
	if got != want {
		t.Errorf("%d visits answered 302 and %d clicks were stored", want, got)
	}
}
