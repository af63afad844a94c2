package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"go.mongodb.org/mongo-driver/v2/bson"
)

var day0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := New(context.Background(), testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func click(id, link, owner string, at time.Time, country, ref, visitor string) analytics.Click {
	return analytics.Click{EventID: id, LinkID: link, OwnerID: owner, ClickedAt: at, Country: country, Referrer: ref,
		DeviceType: analytics.DeviceDesktop, Browser: "Firefox", OS: "Linux", Visitor: visitor}
}

// Clicks delivered twice are stored once and folded once; folding a slot again adds
// nothing; the answer has every day, breakdowns sorted by clicks then value, and visitors
// counted once per day.
func TestSaveFoldAnswer(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	stored := day0.Add(48 * time.Hour)
	batch := []analytics.Click{
		click("e1", "L1", "O1", day0, "GB", "news.example.com", "v1"),
		click("e2", "L1", "O1", day0.Add(time.Hour), "GB", "direct", "v1"),
		click("e3", "L1", "O1", day0.Add(24*time.Hour), "DE", "news.example.com", "v2"),
		click("e4", "L2", "O1", day0, "FR", "direct", "v3"),
		click("e5", "L3", "", day0, "Unknown", "a.example", ""),
	}
	for range 2 { // a redelivery
		if err := s.Save(ctx, batch, stored, nil); err != nil {
			t.Fatal(err)
		}
	}
	slot := Slot(stored)
	for range 2 { // a fold repeated after a crash
		if err := s.FoldSlot(ctx, slot, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LinkAnalytics(ctx, "L1", "abc", day0.AddDate(0, 0, -1), day0.AddDate(0, 0, 2))
	if err != nil {
		t.Fatal(err)
	}
	if got.TotalClicks != 3 || got.UniqueVisitors != 2 || got.ShortCode != "abc" || got.From != "2026-11-19" || got.To != "2026-11-22" {
		t.Fatalf("answer %+v", got)
	}
	want := []analytics.Day{{Date: "2026-11-19"}, {Date: "2026-11-20", Clicks: 2, UniqueVisitors: 1}, {Date: "2026-11-21", Clicks: 1, UniqueVisitors: 1}, {Date: "2026-11-22"}}
	if fmt.Sprint(got.Timeseries) != fmt.Sprint(want) {
		t.Fatalf("timeseries %v, want %v", got.Timeseries, want)
	}
	if fmt.Sprint(got.Countries) != "[{GB 2} {DE 1}]" || fmt.Sprint(got.Referrers) != "[{news.example.com 2} {direct 1}]" ||
		fmt.Sprint(got.Devices) != "[{desktop 3}]" || fmt.Sprint(got.Browsers) != "[{Firefox 3}]" || fmt.Sprint(got.OperatingSystems) != "[{Linux 3}]" {
		t.Fatalf("breakdowns %+v", got)
	}
	counts, err := s.Counts(ctx, "O1", []string{"L1", "L2", "L9"})
	if err != nil || counts.Owner != 4 || counts.Links["L1"] != 3 || counts.Links["L2"] != 1 || counts.Links["L9"] != 0 {
		t.Fatalf("counts %+v, %v", counts, err)
	}
	anon, err := s.Counts(ctx, "", []string{"L3"})
	if err != nil || anon.Links["L3"] != 1 {
		t.Fatalf("counts without owner %+v, %v", anon, err)
	}
	if tot, err := s.Totals(ctx, stored); err != nil || tot.Total != 5 || tot.Last24h != 5 {
		t.Fatalf("totals %+v, %v", tot, err)
	}
	if tot, _ := s.Totals(ctx, stored.Add(25*time.Hour)); tot.Total != 5 || tot.Last24h != 0 {
		t.Fatalf("totals a day later %+v", tot)
	}

	// A purge takes the link's clicks out everywhere, for good — also when a fold that read
	// the slot before the purge writes the link's daily rollup after it.
	if err := s.Purge(ctx, "L1"); err != nil {
		t.Fatal(err)
	}
	if err := s.addOnce(ctx, s.daily, "L1|"+Day(day0), slot+1, bson.D{{Key: "clicks", Value: 1}},
		bson.D{{Key: "link_id", Value: "L1"}, {Key: "day", Value: Day(day0)}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // applying twice takes nothing twice
		if err := s.ApplyPurges(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got, _ = s.LinkAnalytics(ctx, "L1", "abc", day0, day0)
	if got.TotalClicks != 0 {
		t.Fatalf("a rollup a fold wrote after the purge survived it: %d clicks", got.TotalClicks)
	}
	if err := s.Purge(ctx, "L1"); err != nil { // purging again is harmless
		t.Fatal(err)
	}
	later := stored.Add(time.Minute)
	if err := s.Save(ctx, []analytics.Click{click("e6", "L1", "O1", day0, "GB", "direct", "v9")}, later, nil); err != nil {
		t.Fatal(err)
	}
	purged, err := s.PurgedLinks(ctx)
	if err != nil || !purged["L1"] {
		t.Fatalf("purged links %v, %v", purged, err)
	}
	if err := s.FoldSlot(ctx, Slot(later), purged); err != nil {
		t.Fatal(err)
	}
	got, _ = s.LinkAnalytics(ctx, "L1", "abc", day0, day0)
	counts, _ = s.Counts(ctx, "O1", []string{"L1", "L2"})
	if got.TotalClicks != 0 || counts.Owner != 1 || counts.Links["L1"] != 0 || counts.Links["L2"] != 1 {
		t.Fatalf("after purge: answer %d clicks, counts %+v", got.TotalClicks, counts)
	}
	if tot, _ := s.Totals(ctx, later); tot.Total != 2 {
		t.Fatalf("the purged link's clicks stayed in the total: %+v", tot)
	}
}

// Concurrent saves of overlapping batches (two consumers after a reclaim) store each click
// once, and the fold counts each once.
func TestConcurrentSavesCountOnce(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var all []analytics.Click
	for i := range 200 {
		all = append(all, click(fmt.Sprintf("c%d", i), "L1", "O1", day0, "GB", "direct", fmt.Sprintf("v%d", i%7)))
	}
	done := make(chan error, 4)
	for w := range 4 {
		go func() { done <- s.Save(ctx, all[w*25:w*25+125], day0, nil) }()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FoldSlot(ctx, Slot(day0), nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.LinkAnalytics(ctx, "L1", "x", day0, day0)
	if err != nil || got.TotalClicks != 200 || got.UniqueVisitors != 7 {
		t.Fatalf("got %d clicks %d visitors (%v), want 200 and 7", got.TotalClicks, got.UniqueVisitors, err)
	}
}

func TestBreakdownKeysSurviveEscaping(t *testing.T) {
	for _, v := range []string{"a.b.c", "$x", "100%", "%2E", "plain"} {
		if got := unescapeKey(escapeKey(v)); got != v {
			t.Errorf("%q → %q → %q", v, escapeKey(v), got)
		}
	}
}

// A visitor named as stored is not inserted by Save (the caller vouches for it), while the
// click itself is stored.
func TestKnownVisitorsAreNotInsertedAgain(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	first := click("k1", "L1", "O1", day0, "GB", "direct", "v1")
	vouched := click("k2", "L1", "O1", day0, "GB", "direct", "v2")
	if err := s.Save(ctx, []analytics.Click{first, vouched}, day0, map[string]bool{VisitorID(vouched): true}); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldSlot(ctx, Slot(day0), nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.LinkAnalytics(ctx, "L1", "x", day0, day0)
	if err != nil || got.TotalClicks != 2 || got.UniqueVisitors != 1 {
		t.Fatalf("got %d clicks %d visitors (%v), want 2 and 1 (v2 was vouched for, so not inserted)", got.TotalClicks, got.UniqueVisitors, err)
	}
	if VisitorID(analytics.Click{LinkID: "L1"}) != "" {
		t.Fatal("a click without a visitor has a visitor id")
	}
}

// FoldedUntil is zero before the first fold, then the end of the last slot folded: the
// time before which every stored click is counted.
func TestFoldedUntil(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if until, err := s.FoldedUntil(ctx); err != nil || !until.IsZero() {
		t.Fatalf("before any fold: %v, %v; want zero", until, err)
	}
	at := day0.Add(3 * time.Second) // inside the slot starting at day0
	slot := Slot(at)
	if _, err := s.NextSlot(ctx, slot); err != nil {
		t.Fatal(err)
	}
	if until, err := s.FoldedUntil(ctx); err != nil || !until.Equal(day0) {
		t.Fatalf("with slot %d next: %v, %v; want %v", slot, until, err, day0)
	}
	if err := s.Save(ctx, []analytics.Click{click("f1", "L1", "O1", at, "GB", "direct", "")}, at, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldSlot(ctx, slot, nil); err != nil {
		t.Fatal(err)
	}
	if until, err := s.FoldedUntil(ctx); err != nil || !until.Equal(day0.Add(SlotLength)) {
		t.Fatalf("slot %d folded: %v, %v; want %v", slot, until, err, day0.Add(SlotLength))
	}
}
