package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// One client visiting one link 45 times in a window gets 30 counted, the rest counted as
// over budget; a redelivery decides each click as the first time (on another replica too);
// another client, another link, the next window and a click without a client keep theirs.
func TestClickBudget(t *testing.T) {
	rdb := testenv.Redis(t)
	st, err := store.New(context.Background(), testenv.Mongo(t), 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	link := testenv.Name("inflated")
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	over := prometheus.NewCounter(prometheus.CounterOpts{Name: "over"})
	replica := func() stream.Handler {
		c := &Consumer{Store: st, Redis: rdb, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now,
			ClickBudget: 30, BudgetWindow: 10 * time.Minute, Uncounted: over}
		return c.Handle
	}
	first, second := replica(), replica()
	click := func(id, linkID, client string, at time.Time) stream.Message {
		c := analytics.Click{EventID: id, LinkID: linkID, OwnerID: "O1", ClickedAt: at, Country: "GB", Referrer: analytics.Direct,
			DeviceType: analytics.DeviceDesktop, Browser: "Firefox", OS: "Linux", Visitor: "v-" + id, Client: client}
		return stream.Message{ID: id, Values: c.Fields()}
	}
	var msgs []stream.Message
	for i := range 45 { // within one 10-minute window
		msgs = append(msgs, click(fmt.Sprintf("%s-%d", link, i), link, "client-a", at.Add(time.Duration(i)*time.Second)))
	}
	if err := first(ctx, msgs[:20]); err != nil {
		t.Fatal(err)
	}
	for _, handle := range []stream.Handler{first, first, second} { // delivered again
		if err := handle(ctx, msgs[20:]); err != nil {
			t.Fatal(err)
		}
	}
	others := []stream.Message{
		click(link+"-b", link, "client-b", at),                               // another client
		click(link+"-next", link, "client-a", at.Add(10*time.Minute)),        // the next window
		click(link+"-nokey", link, "", at),                                   // no client: no budget
		click(link+"-elsewhere", link+"-2", "client-a", at.Add(time.Second)), // another link
	}
	if err := second(ctx, others); err != nil {
		t.Fatal(err)
	}
	got, err := st.LinkAnalytics(ctx, link, "abc", at, at)
	if err != nil {
		t.Fatal(err)
	}
	if got.TotalClicks != 30+3 {
		t.Fatalf("%d clicks counted, want 30 of client a's 45 and the other three", got.TotalClicks)
	}
	if other, err := st.LinkAnalytics(ctx, link+"-2", "abc", at, at); err != nil || other.TotalClicks != 1 {
		t.Fatalf("another link: %+v %v", other.TotalClicks, err)
	}
	// Which ones counted: the first 30, whatever the deliveries.
	kept, n, err := admitClicks(ctx, rdb, []analytics.Click{
		{EventID: fmt.Sprintf("%s-%d", link, 29), LinkID: link, Client: "client-a", ClickedAt: at.Add(29 * time.Second)},
		{EventID: fmt.Sprintf("%s-%d", link, 30), LinkID: link, Client: "client-a", ClickedAt: at.Add(30 * time.Second)},
	}, 30, 10*time.Minute)
	if err != nil || n != 0 || len(kept) != 1 || kept[0].EventID != fmt.Sprintf("%s-%d", link, 29) {
		t.Fatalf("asked again: kept %+v, %d newly over, %v", kept, n, err)
	}
	// 15 over budget, each counted once however often delivered.
	if v := testutil.ToFloat64(over); v != 15 {
		t.Fatalf("over-budget counter %v, want 15", v)
	}
}
