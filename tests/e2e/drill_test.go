package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
)

// drillClicks is how many redirects each drill sends.
const drillClicks = 20000

// TestClicksSurviveAnalyticsCrash: 20,000 redirects while the only analytics process is
// killed (SIGKILL) and restarted mid-load → exactly 20,000 clicks, none lost, none doubled.
// Then the same with two analytics replicas, one of them killed and left dead: the other
// takes over what the dead one held.
func TestClicksSurviveAnalyticsCrash(t *testing.T) {
	ctx := context.Background()
	t.Cleanup(func() {
		for _, name := range []string{"analytics", "analytics-2"} {
			_ = services.RestartService(ctx, name) // already running: an error, ignored
		}
	})
	t.Run("one replica killed and restarted", func(t *testing.T) {
		services.StopService("analytics-2")
		drill(t, func() {
			services.KillService("analytics")
			if err := services.RestartService(ctx, "analytics"); err != nil {
				t.Error(err)
			}
		})
	})
	t.Run("two replicas, one killed", func(t *testing.T) {
		if err := services.RestartService(ctx, "analytics-2"); err != nil {
			t.Fatal(err)
		}
		drill(t, func() { services.KillService("analytics-2") })
	})
}

// drill sends drillClicks redirects to a new link from 16 parallel visitors, calls crash
// once a quarter of them are done, and waits until the link's analytics count every click
// exactly once.
func drill(t *testing.T, crash func()) {
	owner := register(t)
	r := as(t, owner.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/drill"}`)
	if r.status != 201 {
		t.Fatalf("shorten: %d %s", r.status, r.body)
	}
	code := r.object(t)["short_code"].(string)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var sent, failed atomic.Int64
	var crashed atomic.Bool
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				n := sent.Add(1)
				if n > drillClicks {
					return
				}
				if n == drillClicks/4 {
					// Exactly one visitor sees this number; the load goes on meanwhile.
					wg.Go(func() { crash(); crashed.Store(true) })
				}
				req, _ := http.NewRequest(http.MethodGet, gw+"/"+code, nil)
				req.Header.Set("User-Agent", firefoxLinux)
				// Each visit from an address of its own: one client's visits beyond its
				// click budget on a link would not count.
				req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.19.%d.%d", n/250%250, n%250+1))
				resp, err := hc.Do(req)
				if err != nil || resp.StatusCode != http.StatusFound {
					failed.Add(1)
				}
				if resp != nil {
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	if !crashed.Load() {
		t.Fatal("the crash never happened")
	}
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d redirects failed", n)
	}
	// Two days, today's and yesterday's: a drill that runs across midnight (UTC) has clicks
	// on both, and the link is new.
	start := time.Now()
	var got analytics.LinkAnalytics
	for time.Since(start) < 3*time.Minute {
		r := as(t, owner.cookie, "GET", "/api/user/links/"+code+"/analytics?days=2", "")
		got = analytics.LinkAnalytics{}
		if r.status == 200 && json.Unmarshal(r.body, &got) == nil && got.TotalClicks >= drillClicks {
			break
		}
		time.Sleep(time.Second)
	}
	t.Logf("all clicks visible %s after the last redirect", time.Since(start).Round(time.Second))
	time.Sleep(3 * time.Second) // nothing more may arrive
	r = as(t, owner.cookie, "GET", "/api/user/links/"+code+"/analytics?days=2", "")
	got = analytics.LinkAnalytics{}
	if err := json.Unmarshal(r.body, &got); err != nil || got.TotalClicks != drillClicks {
		t.Fatalf("analytics count %d clicks (%v), want exactly %d", got.TotalClicks, err, drillClicks)
	}
	var link struct {
		ID string `bson:"_id"`
	}
	if err := serviceDB(t, "link").Collection("links").FindOne(context.Background(), bson.D{{Key: "short_code", Value: code}}).Decode(&link); err != nil {
		t.Fatal(err)
	}
	stored, err := serviceDB(t, "analytics").Collection("link_clicks").CountDocuments(context.Background(), bson.D{{Key: "link_id", Value: link.ID}})
	if err != nil || stored != drillClicks {
		t.Fatalf("%d raw clicks stored (%v), want exactly %d", stored, err, drillClicks)
	}
}

// TestWarmRedirectsOutliveTheLinkService: the link service is killed (SIGKILL) and stays
// down for longer than the cache bound (link.CacheTTL, 30 s). Warm codes keep redirecting on
// both gateways the whole time, from the last answer the link service gave; creation answers
// 503 with the envelope and takes no quota unit; once the link service is back, everything
// answers as before.
func TestWarmRedirectsOutliveTheLinkService(t *testing.T) {
	ctx := context.Background()
	ip := newClientIP()
	code, _ := shorten(t, ip, `{"url":"https://93.184.216.34/outage"}`)
	gateways := []string{gw, gw2}
	visit := func(base string) int {
		req, _ := http.NewRequest(http.MethodGet, base+"/"+code, nil)
		req.Header.Set("User-Agent", firefoxLinux)
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, base := range gateways {
		if s := visit(base); s != http.StatusFound {
			t.Fatalf("warm-up visit on %s: %d", base, s)
		}
	}
	services.KillService("link")
	t.Cleanup(func() { _ = services.RestartService(ctx, "link") })
	start := time.Now()
	statuses := map[int]int{}
	for time.Since(start) < 40*time.Second {
		for _, base := range gateways {
			statuses[visit(base)]++
		}
		time.Sleep(250 * time.Millisecond)
	}
	create := do(t, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/during-outage"}`, ip)
	if err := services.RestartService(ctx, "link"); err != nil {
		t.Fatal(err)
	}
	t.Logf("40 s with the link service down: redirect answers by status %v; creation %d", statuses, create.status)
	if len(statuses) != 1 || statuses[http.StatusFound] == 0 {
		t.Errorf("warm redirects during a 40 s link service outage answered %v, want only 302", statuses)
	}
	create.wantError(t, http.StatusServiceUnavailable, "link service unavailable")
	// The failed creation took no unit: the client still has 9 of its 10.
	for i := range 9 {
		if r := do(t, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/after-`+itoa(i)+`"}`, ip); r.status != 201 {
			t.Fatalf("creation %d after the outage: %d %s", i+2, r.status, r.body)
		}
	}
	do(t, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/one-too-many"}`, ip).wantError(t, 429, "anonymous link quota exceeded")
}
