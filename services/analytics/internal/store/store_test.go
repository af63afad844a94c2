package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

var day0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

const retention = 90 * 24 * time.Hour

func newStore(t testing.TB) *Store {
	t.Helper()
	s, err := New(context.Background(), testenv.Mongo(t), retention)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func click(id, link, owner string, at time.Time, country, ref, visitor string) analytics.Click {
	return analytics.Click{EventID: id, LinkID: link, OwnerID: owner, ClickedAt: at, Country: country, Referrer: ref,
		DeviceType: analytics.DeviceDesktop, Browser: "Firefox", OS: "Linux", Visitor: visitor}
}

// count runs every step of a batch of clicks, as one consumer would, and returns its id.
func count(t *testing.T, s *Store, clicks []analytics.Click, now time.Time) bson.ObjectID {
	t.Helper()
	ctx := context.Background()
	batch := bson.NewObjectID()
	before, err := s.Insert(ctx, clicks, batch, now)
	if err != nil {
		t.Fatal(err)
	}
	others, err := s.PendingBatches(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range append([]bson.ObjectID{batch}, others...) {
		if err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	return batch
}

// Clicks delivered twice are stored once and counted once; applying a batch again adds
// nothing; the answer has every day, breakdowns sorted by clicks then value, and visitors
// counted once per day. A purge takes the link out everywhere, for good.
func TestCountAnswerPurge(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := day0.Add(48 * time.Hour)
	batch := []analytics.Click{
		click("e1", "L1", "O1", day0, "GB", "news.example.com", "v1"),
		click("e2", "L1", "O1", day0.Add(time.Hour), "GB", "direct", "v1"),
		click("e3", "L1", "O1", day0.Add(24*time.Hour), "DE", "news.example.com", "v2"),
		click("e4", "L2", "O1", day0, "FR", "direct", "v3"),
		click("e5", "L3", "", day0, "Unknown", "a.example", ""),
	}
	first := count(t, s, batch, now)
	count(t, s, batch, now)                     // a redelivery
	if err := s.Apply(ctx, first); err != nil { // a batch applied again
		t.Fatal(err)
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
	// The hourly totals go by the time of the click: e3 is a day after the others.
	if tot, err := s.Totals(ctx, day0.Add(23*time.Hour)); err != nil || tot.Total != 5 || tot.Last24h != 4 {
		t.Fatalf("totals %+v, %v", tot, err)
	}
	if tot, _ := s.Totals(ctx, now.Add(25*time.Hour)); tot.Total != 5 || tot.Last24h != 0 {
		t.Fatalf("totals two days later %+v", tot)
	}

	// A batch that read L1 as not purged writes its rollups after the purge: settling takes
	// them out again, and the link's total out of its owner's and the global ones, once.
	if err := s.Purge(ctx, "L1"); err != nil {
		t.Fatal(err)
	}
	late := tally{}
	late.addClick(&clickDoc{ID: "e9", LinkID: "L1", OwnerID: "O1", ClickedAt: day0, Day: Day(day0), Country: "GB", Referrer: "direct",
		DeviceType: analytics.DeviceDesktop, Browser: "Firefox", OS: "Linux"}, false)
	if err := s.write(ctx, late.models(&first)); err != nil {
		t.Fatal(err)
	}
	racing := bson.NewObjectID()
	if err := s.write(ctx, late.models(&racing)); err != nil {
		t.Fatal(err)
	}
	if err := s.Settle(ctx, time.Now()); err != nil { // not due yet
		t.Fatal(err)
	}
	if got, _ := s.LinkAnalytics(ctx, "L1", "abc", day0, day0); got.TotalClicks != 2 {
		t.Fatalf("the racing batches' day is %d clicks, want 2 before the purge settles", got.TotalClicks)
	}
	for range 2 { // settling again takes nothing twice
		if err := s.Settle(ctx, time.Now().Add(SettleAfter)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Purge(ctx, "L1"); err != nil { // purging again is harmless
		t.Fatal(err)
	}
	gone, err := s.Purged(ctx, map[string]bool{"L1": true, "L2": true})
	if err != nil || !gone["L1"] || gone["L2"] {
		t.Fatalf("purged %v, %v", gone, err)
	}
	count(t, s, []analytics.Click{click("e6", "L1", "O1", day0, "GB", "direct", "v9")}, now) // a late click of L1
	got, _ = s.LinkAnalytics(ctx, "L1", "abc", day0, day0)
	counts, _ = s.Counts(ctx, "O1", []string{"L1", "L2"})
	if got.TotalClicks != 0 || counts.Owner != 1 || counts.Links["L1"] != 0 || counts.Links["L2"] != 1 {
		t.Fatalf("after purge: answer %d clicks, counts %+v", got.TotalClicks, counts)
	}
	if tot, _ := s.Totals(ctx, now); tot.Total != 2 {
		t.Fatalf("the purged link's clicks stayed in the total: %+v", tot)
	}
	if n, _ := s.visitors.CountDocuments(ctx, prefixRange("L1|")); n != 0 {
		t.Fatalf("%d visitors of the purged link left", n)
	}
}

// Consumers handling overlapping batches at once (a reclaim, an event written twice) store
// each click once and count each once; a batch applied part-way is finished exactly.
func TestConcurrentBatchesCountOnce(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var all []analytics.Click
	for i := range 200 {
		all = append(all, click(fmt.Sprintf("c%d", i), "L1", "O1", day0, "GB", "direct", fmt.Sprintf("v%d", i%7)))
	}
	done := make(chan error, 4)
	for w := range 4 {
		go func() {
			batch := bson.NewObjectID()
			_, err := s.Insert(ctx, all[w*25:w*25+125], batch, day0)
			if err == nil {
				err = s.Apply(ctx, batch)
			}
			if err == nil && w == 0 {
				err = s.Finish(ctx, batch)
			}
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// The others' batches left pending, as by consumers that died before Finish: applied
	// again, they add nothing twice.
	stale, err := s.StaleBatches(ctx, time.Now().Add(time.Minute))
	if err != nil || len(stale) == 0 || len(stale) > 3 {
		t.Fatalf("stale batches %v, %v; want 1 to 3", stale, err)
	}
	for _, b := range stale {
		if err := s.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LinkAnalytics(ctx, "L1", "x", day0, day0)
	if err != nil || got.TotalClicks != 200 || got.UniqueVisitors != 7 {
		t.Fatalf("got %d clicks %d visitors (%v), want 200 and 7", got.TotalClicks, got.UniqueVisitors, err)
	}
}

// A bulkWrite cut short leaves some rollups with the batch and others without; applying the
// batch again completes it, each rollup counting it once.
func TestPartialApplyCompletesOnce(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	batch := bson.NewObjectID()
	clicks := []analytics.Click{click("p1", "L1", "O1", day0, "GB", "direct", "v1"), click("p2", "L2", "O1", day0, "DE", "direct", "v1")}
	if _, err := s.Insert(ctx, clicks, batch, day0); err != nil {
		t.Fatal(err)
	}
	t1 := tally{} // what Apply writes for the batch
	for _, c := range clicks {
		t1.addClick(&clickDoc{ID: c.EventID, LinkID: c.LinkID, OwnerID: c.OwnerID, ClickedAt: day0, Day: Day(day0), Country: c.Country,
			Referrer: c.Referrer, DeviceType: c.DeviceType, Browser: c.Browser, OS: c.OS, Visitor: VisitorID(c)}, true)
	}
	models := t1.models(&batch)
	if err := s.write(ctx, models[:len(models)/2]); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Apply(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	counts, _ := s.Counts(ctx, "O1", []string{"L1", "L2"})
	tot, _ := s.Totals(ctx, day0)
	a1, _ := s.LinkAnalytics(ctx, "L1", "x", day0, day0)
	if counts.Owner != 2 || counts.Links["L1"] != 1 || counts.Links["L2"] != 1 || tot.Total != 2 || tot.Last24h != 2 || a1.TotalClicks != 1 || a1.UniqueVisitors != 1 {
		t.Fatalf("counts %+v, totals %+v, L1 %d clicks %d visitors", counts, tot, a1.TotalClicks, a1.UniqueVisitors)
	}
}

func TestBreakdownKeysSurviveEscaping(t *testing.T) {
	for _, v := range []string{"a.b.c", "$x", "100%", "%2E", "plain", "", "%00", "%"} {
		if got := unescapeKey(escapeKey(v)); got != v {
			t.Errorf("%q → %q → %q", v, escapeKey(v), got)
		}
	}
	if VisitorID(analytics.Click{LinkID: "L1"}) != "" {
		t.Fatal("a click without a visitor has a visitor id")
	}
}

// AppliedUntil is the time the oldest pending click was stored, or now.
func TestAppliedUntil(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := day0.Add(time.Hour)
	if until, err := s.AppliedUntil(ctx, now); err != nil || !until.Equal(now) {
		t.Fatalf("nothing pending: %v, %v; want %v", until, err, now)
	}
	batch := bson.NewObjectID()
	if _, err := s.Insert(ctx, []analytics.Click{click("a1", "L1", "O1", day0, "GB", "direct", "")}, batch, day0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if until, err := s.AppliedUntil(ctx, now); err != nil || !until.Equal(day0.Add(time.Minute)) {
		t.Fatalf("one pending: %v, %v", until, err)
	}
	if err := s.Apply(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if until, _ := s.AppliedUntil(ctx, now); !until.Equal(now) {
		t.Fatalf("applied: %v", until)
	}
}

// storedRecords are link's stored clicks and first visits as one record each.
func storedRecords(t *testing.T, s *Store, link string) []dayRecord {
	t.Helper()
	ctx := context.Background()
	cur, err := s.clicks.Find(ctx, bson.D{{Key: "link_id", Value: link}})
	if err != nil {
		t.Fatal(err)
	}
	var clicks []clickDoc
	if err := cur.All(ctx, &clicks); err != nil {
		t.Fatal(err)
	}
	var out []dayRecord
	for _, c := range clicks {
		one := func(v string) map[string]int64 { return map[string]int64{escapeKey(v): 1} }
		out = append(out, dayRecord{Day: c.Day, Clicks: 1, Breakdowns: Breakdowns{Countries: one(c.Country), Referrers: one(c.Referrer),
			Devices: one(c.DeviceType), Browsers: one(c.Browser), OSs: one(c.OS)}})
	}
	cur, err = s.visitors.Find(ctx, prefixRange(link+"|"))
	if err != nil {
		t.Fatal(err)
	}
	var visitors []visitorDoc
	if err := cur.All(ctx, &visitors); err != nil {
		t.Fatal(err)
	}
	for _, v := range visitors {
		out = append(out, dayRecord{Day: strings.Split(v.ID, "|")[1], UniqueVisitors: 1})
	}
	return out
}

// randomHistory counts clicks of two links over 400 days — across month and year ends, with
// breakdown values that need escaping — in three batches, and returns the newest day.
func randomHistory(t *testing.T, s *Store, rng *rand.Rand) time.Time {
	t.Helper()
	end := time.Date(2027, 1, 20, 12, 0, 0, 0, time.UTC)
	countries := []string{"GB", "DE", "Unknown", "F.R"}
	referrers := []string{"direct", "news.example.com", "$weird.example"}
	for batch := range 3 {
		var clicks []analytics.Click
		for i := range 300 {
			at := end.AddDate(0, 0, -rng.IntN(400)).Add(-time.Duration(rng.IntN(12)) * time.Hour)
			link := []string{"L1", "L2"}[rng.IntN(2)]
			clicks = append(clicks, click(fmt.Sprintf("r%d-%d", batch, i), link, "O1", at, countries[rng.IntN(len(countries))],
				referrers[rng.IntN(len(referrers))], fmt.Sprint("v", rng.IntN(5))))
		}
		count(t, s, clicks, end)
	}
	return end
}

// answerFrom is the answer as plain records give it, one per day: the days' clicks,
// visitors and breakdowns, each day's breakdowns keyed as stored (escapeKey).
type dayRecord struct {
	Day            string `bson:"day"`
	Clicks         int64  `bson:"clicks"`
	UniqueVisitors int64  `bson:"unique_visitors"`
	Breakdowns     `bson:",inline"`
}

func answerFrom(records []dayRecord, from, to time.Time) analytics.LinkAnalytics {
	out := analytics.LinkAnalytics{ShortCode: "abc", From: Day(from), To: Day(to)}
	byDay := map[string]analytics.Day{}
	var total Breakdowns
	for _, d := range records {
		if d.Day < Day(from) || d.Day > Day(to) {
			continue
		}
		v := byDay[d.Day]
		v.Clicks += d.Clicks
		v.UniqueVisitors += d.UniqueVisitors
		byDay[d.Day] = v
		out.TotalClicks += d.Clicks
		out.UniqueVisitors += d.UniqueVisitors
		total.add(d.Breakdowns)
	}
	for d := from.UTC().Truncate(24 * time.Hour); !d.After(to); d = d.AddDate(0, 0, 1) {
		out.Timeseries = append(out.Timeseries, analytics.Day{Date: Day(d), Clicks: byDay[Day(d)].Clicks, UniqueVisitors: byDay[Day(d)].UniqueVisitors})
	}
	u := func(m map[string]int64) []analytics.Share {
		o := map[string]int64{}
		for k, n := range m {
			o[unescapeKey(k)] += n
		}
		return shares(o)
	}
	out.Countries, out.Referrers, out.Devices, out.Browsers, out.OperatingSystems = u(total.Countries), u(total.Referrers), u(total.Devices), u(total.Browsers), u(total.OSs)
	return out
}

// checkRanges compares the answer with the records' for ranges ending on the newest
// day (as the API asks), ranges ending before it, within one month, over a year end and
// beyond the data.
func checkRanges(t *testing.T, s *Store, end time.Time, rng *rand.Rand, records func(link string) []dayRecord) {
	t.Helper()
	type span struct{ from, to time.Time }
	spans := []span{{end.AddDate(0, 0, -364), end}, {end.AddDate(0, 0, -29), end}, {end, end}, {end.AddDate(0, 0, -500), end.AddDate(0, 0, -400)},
		{time.Date(2026, 12, 25, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 5, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)}}
	for range 20 {
		to := end.AddDate(0, 0, -rng.IntN(400))
		spans = append(spans, span{to.AddDate(0, 0, -rng.IntN(365)), to})
	}
	for _, link := range []string{"L1", "L2"} {
		for _, sp := range spans {
			got, err := s.LinkAnalytics(context.Background(), link, "abc", sp.from, sp.to)
			if err != nil {
				t.Fatal(err)
			}
			want := answerFrom(records(link), sp.from, sp.to)
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
				t.Fatalf("%s %s..%s:\n got %+v\nwant %+v", link, Day(sp.from), Day(sp.to), got, want)
			}
		}
	}
}

// The monthly rollups answer any range exactly as the stored clicks and visitors would, and
// the answer has clicks in it (a comparison of two empty answers proves nothing).
func TestMonthlyAnswersAgreeWithClicks(t *testing.T) {
	s := newStore(t)
	rng := rand.New(rand.NewPCG(1, 2))
	end := randomHistory(t, s, rng)
	checkRanges(t, s, end, rng, func(link string) []dayRecord { return storedRecords(t, s, link) })
	got, err := s.LinkAnalytics(context.Background(), "L1", "abc", end.AddDate(0, 0, -364), end)
	if err != nil || got.TotalClicks < 200 || got.UniqueVisitors == 0 || len(got.Countries) != 4 || len(got.Referrers) != 3 {
		t.Fatalf("a year of L1: %+v, %v", got, err)
	}
}

// Seeded rollups and counted clicks add up.
func TestSeedAddsUp(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.Seed(ctx, "L1", "O1", Day(day0), 5, 2, map[string]map[string]int64{"countries": {"GB": 5}}); err != nil {
		t.Fatal(err)
	}
	count(t, s, []analytics.Click{click("s1", "L1", "O1", day0, "DE", "direct", "v1")}, day0)
	got, err := s.LinkAnalytics(ctx, "L1", "abc", day0, day0)
	if err != nil || got.TotalClicks != 6 || got.UniqueVisitors != 3 || fmt.Sprint(got.Countries) != "[{GB 5} {DE 1}]" {
		t.Fatalf("seeded 5, counted 1: %+v, %v", got, err)
	}
	if c, _ := s.Counts(ctx, "O1", []string{"L1"}); c.Links["L1"] != 6 {
		t.Fatalf("counts %+v", c)
	}
}

// A click whose breakdown values are empty (an event written by hand, or a bad producer) is
// counted like any other instead of failing its whole batch.
func TestEmptyBreakdownValuesAreCounted(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	batch := bson.NewObjectID()
	c := click("e1", "L1", "O1", day0, "", "", "v1")
	c.DeviceType, c.Browser, c.OS = "", "", ""
	if _, err := s.Insert(ctx, []analytics.Click{c}, batch, day0); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, batch); err != nil {
		t.Fatalf("a batch with empty values: %v", err)
	}
	a, err := s.LinkAnalytics(ctx, "L1", "x", day0, day0)
	if err != nil || a.TotalClicks != 1 {
		t.Fatalf("analytics %+v, %v", a, err)
	}
}

// Distinct batches applied at once that all create the same new rollups (a new hour, a new
// day of a link, a new owner): every batch counts in every rollup, whichever created it.
func TestRacingBatchesCreatingOneRollupAllCount(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const writers = 8
	for round := range 5 {
		link, owner := fmt.Sprintf("R%d", round), fmt.Sprintf("OR%d", round)
		at := day0.Add(time.Duration(round+1) * 24 * time.Hour)
		start := make(chan struct{})
		errs := make(chan error, writers)
		for w := range writers {
			go func() {
				batch := bson.NewObjectID()
				c := click(fmt.Sprintf("r%d-%d", round, w), link, owner, at, "GB", "direct", fmt.Sprintf("v%d", w))
				_, err := s.Insert(ctx, []analytics.Click{c}, batch, at)
				<-start
				if err == nil {
					err = s.Apply(ctx, batch)
				}
				errs <- err
			}()
		}
		close(start)
		for range writers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		a, err := s.LinkAnalytics(ctx, link, "x", at, at)
		if err != nil || a.TotalClicks != writers || a.UniqueVisitors != writers {
			t.Fatalf("round %d: link %d clicks %d visitors (%v), want %d", round, a.TotalClicks, a.UniqueVisitors, err, writers)
		}
		counts, err := s.Counts(ctx, owner, []string{link})
		if err != nil || counts.Owner != writers || counts.Links[link] != writers {
			t.Fatalf("round %d: counts %+v (%v), want %d", round, counts, err, writers)
		}
	}
}

// A settle that stopped after taking a purged link's total out of the totals, and ran again
// after the totals took more batches than their guard window holds, takes nothing out twice;
// once settled, the guard marks are cleared.
func TestSettleResumedLateSubtractsOnce(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	count(t, s, []analytics.Click{click("s1", "L1", "O1", day0, "GB", "direct", "v1"), click("s2", "L1", "O1", day0, "GB", "direct", "v2"),
		click("s3", "L2", "O1", day0, "GB", "direct", "v3")}, day0)
	if err := s.Purge(ctx, "L1"); err != nil {
		t.Fatal(err)
	}
	// The state a crash leaves after the subtraction: total recorded, both totals taken
	// down and marked, the link's total not yet deleted, the purge not settled.
	if _, err := s.purged.UpdateOne(ctx, bson.D{{Key: "_id", Value: "L1"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "total", Value: int64(2)}, {Key: "owner_id", Value: "O1"}}}}); err != nil {
		t.Fatal(err)
	}
	many := make(bson.A, guardWindow+100)
	for i := range many {
		many[i] = bson.NewObjectID()
	}
	for _, id := range []string{globalAll, ownerRollup("O1")} {
		if _, err := s.rollups.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "clicks", Value: -2}}},
			{Key: "$push", Value: bson.D{{Key: "purges", Value: "L1"},
				{Key: "applied", Value: bson.D{{Key: "$each", Value: many}, {Key: "$slice", Value: -guardWindow}}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := s.Settle(ctx, time.Now().Add(2*SettleAfter)); err != nil {
			t.Fatal(err)
		}
	}
	counts, err := s.Counts(ctx, "O1", []string{"L1", "L2"})
	tot, _ := s.Totals(ctx, day0)
	if err != nil || counts.Owner != 1 || counts.Links["L1"] != 0 || tot.Total != 1 {
		t.Fatalf("after the resumed settle: counts %+v, total %d (%v); want owner 1, total 1", counts, tot.Total, err)
	}
	for _, id := range []string{globalAll, ownerRollup("O1")} {
		if n, _ := s.rollups.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}, {Key: "purges", Value: "L1"}}); n != 0 {
			t.Fatalf("%s keeps the purge's mark", id)
		}
	}
}
