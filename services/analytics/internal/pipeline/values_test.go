package pipeline

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// A link flooded with made-up referrers, browsers and OSes records its first MaxValues of
// each per month and counts the rest as Other: every click counted, the rollups bounded, a
// redelivery decided as the first delivery, other links and the next month untouched.
func TestMadeUpValuesAreBounded(t *testing.T) {
	rdb := testenv.Redis(t)
	st, err := store.New(context.Background(), testenv.Mongo(t), 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	link := testenv.Name("flooded")
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	replica := func() stream.Handler {
		c := &Consumer{Store: st, Redis: rdb, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now}
		return c.Handle
	}
	first, second := replica(), replica()

	const flood = analytics.MaxValues + 50
	var msgs []stream.Message
	for i := range flood {
		c := analytics.Click{EventID: fmt.Sprintf("%s-%d", link, i), LinkID: link, OwnerID: "O1", ClickedAt: at.Add(time.Duration(i) * time.Second),
			Country: "GB", Referrer: fmt.Sprintf("r%03d.example", i), DeviceType: analytics.DeviceDesktop,
			Browser: fmt.Sprintf("B%03d", i), OS: fmt.Sprintf("OS%03d", i)}
		msgs = append(msgs, stream.Message{ID: fmt.Sprint(i), Values: c.Fields()})
	}
	// Another link and the next month keep their own room.
	other := analytics.Click{EventID: link + "-other", LinkID: link + "-2", ClickedAt: at, Referrer: "r149.example", Browser: "B149", OS: "OS149"}
	next := analytics.Click{EventID: link + "-next", LinkID: link, ClickedAt: at.AddDate(0, 1, 0), Referrer: "r149.example", Browser: "B149", OS: "OS149"}
	msgs = append(msgs, stream.Message{ID: "o", Values: other.Fields()}, stream.Message{ID: "n", Values: next.Fields()})
	// Two batches, the second delivered again, to the same replica and to another (which
	// remembers nothing): admission is per month, not per batch, and the same every time.
	for i, batch := range [][]stream.Message{msgs[:60], msgs[60:], msgs[60:], msgs[60:]} {
		handle := first
		if i == 3 {
			handle = second
		}
		if err := handle(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.LinkAnalytics(ctx, link, "abc", at, at)
	if err != nil {
		t.Fatal(err)
	}
	if got.TotalClicks != flood {
		t.Fatalf("total clicks %d, want %d", got.TotalClicks, flood)
	}
	for name, shares := range map[string][]analytics.Share{"referrers": got.Referrers, "browsers": got.Browsers, "operating systems": got.OperatingSystems} {
		if len(shares) != analytics.MaxValues+1 || shares[0] != (analytics.Share{Value: analytics.Other, Clicks: flood - analytics.MaxValues}) {
			t.Fatalf("%s: %d values, first %+v; want %d values and %s with %d clicks", name, len(shares), shares[0], analytics.MaxValues+1, analytics.Other, flood-analytics.MaxValues)
		}
		prefix := map[string]string{"referrers": "r", "browsers": "B", "operating systems": "OS"}[name]
		for _, s := range shares[1:] {
			// First come, first admitted: the flood's first MaxValues, one click each.
			var n int
			if _, err := fmt.Sscanf(s.Value, prefix+"%03d", &n); err != nil || n >= analytics.MaxValues || s.Clicks != 1 {
				t.Fatalf("%s: %+v admitted", name, s)
			}
		}
	}
	for _, c := range []analytics.Click{other, next} {
		got, err := st.LinkAnalytics(ctx, c.LinkID, "abc", c.ClickedAt, c.ClickedAt)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Referrers) != 1 || got.Referrers[0].Value != "r149.example" || got.Browsers[0].Value != "B149" {
			t.Fatalf("%s on %s: %+v %+v; want its own values", c.LinkID, c.ClickedAt.Format(time.DateOnly), got.Referrers, got.Browsers)
		}
	}
	// Asked again, with nothing remembered (Redis decides) and then remembering (memory
	// decides), each value is decided as the first time; "direct" and "Unknown" always pass.
	memory := &decisions{}
	for round := range 2 {
		for i, m := range msgs[:flood] {
			c, err := analytics.ClickFromValues(m.Values)
			if err != nil {
				t.Fatal(err)
			}
			c.OS = analytics.Unknown
			if i%2 == 0 {
				c.Referrer = analytics.Direct
			}
			again := []analytics.Click{c}
			if err := admitValues(ctx, rdb, memory, again); err != nil {
				t.Fatal(err)
			}
			want := c.Browser
			if i >= analytics.MaxValues {
				want = analytics.Other
			}
			if again[0].Browser != want || again[0].OS != analytics.Unknown || i%2 == 0 && again[0].Referrer != analytics.Direct {
				t.Fatalf("round %d, click %d asked again: %+v; want browser %q", round, i, again[0], want)
			}
		}
	}
}

// An entry packing several clicks counts each of them once, delivered once or again; a
// damaged line in it costs that line alone.
func TestPackedEntriesCountEveryClick(t *testing.T) {
	rdb := testenv.Redis(t)
	st, err := store.New(context.Background(), testenv.Mongo(t), 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	link := testenv.Name("packed")
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	c := &Consumer{Store: st, Redis: rdb, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now}
	var msgs []stream.Message
	n := 0
	for e := range 3 {
		var b []byte
		for i := range analytics.MaxPerEntry {
			if i > 0 {
				b = append(b, '\n')
			}
			b = analytics.Click{EventID: fmt.Sprintf("%s-%d", link, n), LinkID: link, ClickedAt: at, Browser: "Firefox"}.AppendCompact(b)
			n++
		}
		if e == 1 {
			b = append(b, "\n1\tdamaged"...)
		}
		msgs = append(msgs, stream.Message{ID: fmt.Sprint(e), Values: map[string]string{analytics.CompactField: string(b)}})
	}
	for _, batch := range [][]stream.Message{msgs, msgs[1:2]} { // the second entry again
		if err := c.Handle(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.LinkAnalytics(ctx, link, "abc", at, at)
	if err != nil {
		t.Fatal(err)
	}
	if got.TotalClicks != int64(n) {
		t.Fatalf("total clicks %d, want %d", got.TotalClicks, n)
	}
}
