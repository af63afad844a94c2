package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/identity"
	pkgservice "github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/analytics/internal/app"
	"github.com/linkmesh/linkmesh/services/analytics/internal/config"
)

func xadd(t *testing.T, rdb redis.UniversalClient, values map[string]any) {
	t.Helper()
	if err := rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: analytics.Stream, Values: values}).Err(); err != nil {
		t.Fatal(err)
	}
}

// The service consumes the clicks stream through the production boot path: a click written
// twice counts once, an entry that is no click is skipped, the clicks are counted within two
// seconds, and the answer, the counts and the purge behave as the link service and
// moderation expect.
func TestConsumeAnswer(t *testing.T) {
	cfg := &config.Config{}
	b := testenv.Boot(t, pkgservice.For(pkgconfig.Analytics, cfg, app.Wire))
	rdb := testenv.Redis(t)
	link := testenv.Name("link")
	at := time.Now().UTC()
	c := analytics.Click{EventID: testenv.Name("ev"), LinkID: link, OwnerID: "O1", ShortCode: "abc", ClickedAt: at,
		Country: "GB", Referrer: "news.example.com", DeviceType: analytics.DeviceMobile, Browser: "Mobile Safari", OS: "iOS", Visitor: "v1"}
	xadd(t, rdb, c.Values())
	xadd(t, rdb, c.Values()) // written twice by a retrying producer
	other := c
	other.EventID, other.Visitor, other.Country = testenv.Name("ev"), "v2", ""
	xadd(t, rdb, other.Values())
	xadd(t, rdb, map[string]any{"junk": "1"})

	user := b.As(t, identity.Caller{UserID: "O1", Role: "user"})
	var got analytics.LinkAnalytics
	start := time.Now()
	deadline := start.Add(time.Minute)
	for time.Now().Before(deadline) {
		// Today and yesterday (UTC): the click's day, even if midnight passes meanwhile.
		r := b.Do(t, user, "GET", "/internal/analytics/links/"+link+"?days=2&code=abc", "")
		if r.Status != http.StatusOK || json.Unmarshal([]byte(r.Body), &got) != nil {
			t.Fatalf("answer: %d %s", r.Status, r.Body)
		}
		if got.TotalClicks >= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the clicks were counted %s after they were written, want at most 2 s", took.Round(time.Millisecond))
	}
	if got.TotalClicks != 2 || got.UniqueVisitors != 2 || got.ShortCode != "abc" || len(got.Timeseries) != 2 ||
		len(got.Countries) != 2 || got.Countries[0].Value != "GB" || got.Countries[1].Value != analytics.Unknown {
		t.Fatalf("answer %+v", got)
	}
	r := b.Do(t, user, "POST", "/internal/analytics/counts", `{"owner_id":"O1","link_ids":["`+link+`"]}`)
	var counts analytics.Counts
	if r.Status != http.StatusOK || json.Unmarshal([]byte(r.Body), &counts) != nil || counts.Links[link] != 2 || counts.Owner < 2 {
		t.Fatalf("counts: %d %s", r.Status, r.Body)
	}

	// Bad input is a 400 naming what is wrong; the routes need the internal token; only a
	// moderator purges.
	b.Do(t, user, "GET", "/internal/analytics/links/"+link+"?days=0", "").WantFailure(t, 400, "days must be an integer between 1 and 365")
	ids := `"` + strings.Repeat(`x","`, 100) + `x"`
	b.Do(t, user, "POST", "/internal/analytics/counts", `{"link_ids":[`+ids+`]}`).WantFailure(t, 400, "link_ids holds at most 100 ids")
	b.Do(t, user, "POST", "/internal/analytics/counts", `{"link_ids":`).WantFailure(t, 400, "request body is not valid JSON")
	b.Do(t, context.Background(), "GET", "/internal/analytics/links/"+link, "").WantFailure(t, 401, identity.MsgTokenRequired)
	b.Do(t, user, "DELETE", "/internal/analytics/links/"+link, "").WantFailure(t, 403, "insufficient permissions")
	mod := b.As(t, identity.Caller{UserID: "M1", Role: identity.RoleModerator})
	for range 2 {
		if r := b.Do(t, mod, "DELETE", "/internal/analytics/links/"+link, ""); r.Status != http.StatusNoContent {
			t.Fatalf("purge: %d %s", r.Status, r.Body)
		}
	}
	r = b.Do(t, user, "GET", "/internal/analytics/links/"+link+"?days=2", "")
	if json.Unmarshal([]byte(r.Body), &got) != nil || got.TotalClicks != 0 {
		t.Fatalf("after purge: %s", r.Body)
	}
}
