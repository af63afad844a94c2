package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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
	late := monthFold{}
	late.add(&rollup{link: "L1", owner: "O1", day: Day(day0), clicks: 1, breakdown: map[string]map[string]int64{"countries": {"GB": 1}}})
	if err := late.write(ctx, s, slot+1); err != nil {
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

// storedRecords are link's stored clicks and visitors as one record each.
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
	cur, err = s.visitors.Find(ctx, bson.D{{Key: "link_id", Value: link}})
	if err != nil {
		t.Fatal(err)
	}
	var visitors []visitorDoc
	if err := cur.All(ctx, &visitors); err != nil {
		t.Fatal(err)
	}
	for _, v := range visitors {
		out = append(out, dayRecord{Day: v.Day, UniqueVisitors: 1})
	}
	return out
}

// randomHistory stores and folds clicks of two links over 400 days — across month and year
// ends, with breakdown values that need escaping — in three slots, and returns the day of
// the newest click.
func randomHistory(t *testing.T, s *Store, rng *rand.Rand) time.Time {
	t.Helper()
	ctx := context.Background()
	end := time.Date(2027, 1, 20, 12, 0, 0, 0, time.UTC)
	countries := []string{"GB", "DE", "Unknown", "F.R"}
	referrers := []string{"direct", "news.example.com", "$weird.example"}
	for batch := range 3 {
		now := end.Add(time.Duration(batch) * time.Minute)
		var clicks []analytics.Click
		for i := range 300 {
			at := end.AddDate(0, 0, -rng.IntN(400)).Add(-time.Duration(rng.IntN(12)) * time.Hour)
			link := []string{"L1", "L2"}[rng.IntN(2)]
			clicks = append(clicks, click(fmt.Sprintf("r%d-%d", batch, i), link, "O1", at, countries[rng.IntN(len(countries))],
				referrers[rng.IntN(len(referrers))], fmt.Sprint("v", rng.IntN(5))))
		}
		if err := s.Save(ctx, clicks, now, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.FoldSlot(ctx, Slot(now), nil); err != nil {
			t.Fatal(err)
		}
	}
	return end
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

// Data folded before the monthly rollups existed, as daily rollups only: BuildMonthly makes
// them from the daily ones, once and again after a crash midway, and folds after it add to
// them.
func TestBuildMonthlyFromDaily(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	end := time.Date(2027, 1, 20, 12, 0, 0, 0, time.UTC)
	legacy := map[string][]dayRecord{}
	for _, link := range []string{"L1", "L2"} {
		var total int64
		for d := range 400 {
			if rng.IntN(3) == 0 {
				continue
			}
			n := int64(1 + rng.IntN(9))
			rec := dayRecord{Day: Day(end.AddDate(0, 0, -d)), Clicks: n, UniqueVisitors: 1 + n/2, Breakdowns: Breakdowns{
				Countries: map[string]int64{"GB": n - 1, escapeKey("F.R"): 1}, Referrers: map[string]int64{"direct": n},
				Devices: map[string]int64{"desktop": n}, Browsers: map[string]int64{"Firefox": n}, OSs: map[string]int64{"Linux": n}}}
			legacy[link] = append(legacy[link], rec)
			total += n
			// As an earlier version's fold wrote it.
			doc := struct {
				ID       string    `bson:"_id"`
				LinkID   string    `bson:"link_id"`
				OwnerID  string    `bson:"owner_id"`
				Record   dayRecord `bson:",inline"`
				LastSlot int64     `bson:"last_slot"`
			}{link + "|" + rec.Day, link, "O1", rec, 7}
			if _, err := s.daily.InsertOne(ctx, doc); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.links.InsertOne(ctx, bson.D{{Key: "_id", Value: link}, {Key: "owner_id", Value: "O1"}, {Key: "clicks", Value: total}, {Key: "last_slot", Value: int64(7)}}); err != nil {
			t.Fatal(err)
		}
	}
	// A build cut short: one month half written.
	half := monthFold{}
	half.add(&rollup{link: "L1", owner: "O1", day: "2026-12-05", clicks: 1000, breakdown: map[string]map[string]int64{"countries": {"GB": 1000}}})
	if err := half.write(ctx, s, 7); err != nil {
		t.Fatal(err)
	}
	// The fold's state as a version without monthly rollups left it.
	folded := Slot(end.Add(10 * time.Minute))
	if _, err := s.state.InsertOne(ctx, bson.D{{Key: "_id", Value: foldID}, {Key: "next_slot", Value: folded + 1}}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // and once more as after a crash before the build was recorded
		if rebuilt, links, err := s.BuildMonthly(ctx, nil); err != nil || !rebuilt || links != 2 {
			t.Fatalf("build: rebuilt %v, %d links, %v; want 2 links", rebuilt, links, err)
		}
		if _, err := s.state.UpdateOne(ctx, bson.D{{Key: "_id", Value: foldID}}, bson.D{{Key: "$unset", Value: bson.D{{Key: monthlyNext, Value: ""}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.BuildMonthly(ctx, nil); err != nil {
		t.Fatal(err)
	}
	checkRanges(t, s, end, rng, func(link string) []dayRecord { return legacy[link] })
	// Recorded: a new store (a restarted leader) does not build again.
	if _, err := s.monthly.DeleteMany(ctx, bson.D{{Key: "link_id", Value: "L2"}}); err != nil {
		t.Fatal(err)
	}
	s2, err := New(ctx, s.clicks.Database())
	if err != nil {
		t.Fatal(err)
	}
	if rebuilt, _, err := s2.BuildMonthly(ctx, nil); err != nil || rebuilt {
		t.Fatalf("a recorded build ran again: %v, %v", rebuilt, err)
	}
	if n, _ := s.monthly.CountDocuments(ctx, bson.D{{Key: "link_id", Value: "L2"}}); n != 0 {
		t.Fatalf("built again after it was recorded: %d monthly rollups of L2", n)
	}
	// A slot folded after the build adds to the built months.
	now := time.UnixMilli((folded + 1) * SlotLength.Milliseconds())
	if err := s.Save(ctx, []analytics.Click{click("late", "L1", "O1", end, "DE", "direct", "vx")}, now, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldSlot(ctx, Slot(now), nil); err != nil {
		t.Fatal(err)
	}
	want := answerFrom(append(legacy["L1"], storedRecords(t, s, "L1")...), end.AddDate(0, 0, -30), end)
	got, err := s.LinkAnalytics(ctx, "L1", "abc", end.AddDate(0, 0, -30), end)
	if err != nil || fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) || got.TotalClicks == 0 {
		t.Fatalf("after a fold: got %+v (%v), want %+v", got, err, want)
	}
}

// Seed creates rollups the fold adds to, and leaves the slot of one the fold wrote: a slot
// folded again after a crash still adds nothing twice.
func TestSeedKeepsTheFoldsSlot(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.Seed(ctx, "L1", "O1", Day(day0), 5, 2, map[string]map[string]int64{"countries": {"GB": 5}}); err != nil {
		t.Fatal(err)
	}
	now := day0.Add(time.Hour)
	if err := s.Save(ctx, []analytics.Click{click("s1", "L1", "O1", day0, "DE", "direct", "v1")}, now, nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.FoldSlot(ctx, Slot(now), nil); err != nil {
			t.Fatal(err)
		}
		// Seeding another day of the month after the fold wrote the month.
		if err := s.Seed(ctx, "L1", "O1", Day(day0.AddDate(0, 0, 1)), 1, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LinkAnalytics(ctx, "L1", "abc", day0, day0.AddDate(0, 0, 1))
	if err != nil || got.TotalClicks != 5+1+2 || fmt.Sprint(got.Countries) != "[{GB 5} {DE 1}]" {
		t.Fatalf("seeded 5+2, folded 1 once: %+v, %v", got, err)
	}
}

// foldLikeAnEarlierVersion folds slot as a version without monthly rollups did: daily
// rollups and totals, then next_slot alone. With only, it stops in the middle: it writes the
// daily rollups of the link-days only names, and does not move next_slot.
func foldLikeAnEarlierVersion(t *testing.T, s *Store, slot int64, only func(key string) bool) {
	t.Helper()
	ctx := context.Background()
	days, links, _, err := s.slotRollups(ctx, slot, nil)
	if err != nil {
		t.Fatal(err)
	}
	for id, r := range days {
		if only != nil && !only(id) {
			continue
		}
		inc, set := r.dailyUpdate()
		set = slices.DeleteFunc(set, func(e bson.E) bool { return e.Key == "month" }) // it had no month field
		if err := s.addOnce(ctx, s.daily, id, slot, inc, set); err != nil {
			t.Fatal(err)
		}
	}
	if only != nil {
		return
	}
	for id, r := range links {
		if err := s.addOnce(ctx, s.links, id, slot, bson.D{{Key: "clicks", Value: r.clicks}}, bson.D{{Key: "owner_id", Value: r.owner}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.state.UpdateOne(ctx, bson.D{{Key: "_id", Value: foldID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "next_slot", Value: slot + 1}}}}); err != nil {
		t.Fatal(err)
	}
}

// A rolling update: this version folds, then a replica of the version before it takes the
// lease, folds a slot whole and stops in the middle of the next one; this version leads
// again. Its next fold rebuilds the monthly rollups, taking the half-folded slot's share out
// of the days that hold it, and folds on: the answers equal the stored clicks', none counted
// twice, none missed.
func TestMonthlyRebuiltAfterAnEarlierVersionFolded(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	end := time.Date(2027, 1, 20, 12, 0, 0, 0, time.UTC)
	if _, err := s.NextSlot(ctx, Slot(end)); err != nil {
		t.Fatal(err)
	}
	randomHistory(t, s, rng) // folds Slot(end) … Slot(end)+12 as this version
	save := func(at time.Time, prefix string) int64 {
		var clicks []analytics.Click
		for i := range 200 {
			day := end.AddDate(0, 0, -rng.IntN(60))
			clicks = append(clicks, click(fmt.Sprintf("%s%d", prefix, i), []string{"L1", "L2"}[rng.IntN(2)], "O1", day,
				[]string{"GB", "DE"}[rng.IntN(2)], "direct", fmt.Sprint("w", rng.IntN(7))))
		}
		if err := s.Save(ctx, clicks, at, nil); err != nil {
			t.Fatal(err)
		}
		return Slot(at)
	}
	next, err := s.NextSlot(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := func(slot int64) time.Time { return time.UnixMilli(slot * SlotLength.Milliseconds()).Add(time.Second) }
	whole := save(at(next), "old-")
	foldLikeAnEarlierVersion(t, s, whole, nil)
	halfway := save(at(next+1), "cut-")
	foldLikeAnEarlierVersion(t, s, halfway, func(key string) bool { return strings.HasPrefix(key, "L1|") })

	// This version leads again: the fold's round.
	if rebuilt, _, err := s.BuildMonthly(ctx, nil); err != nil || !rebuilt {
		t.Fatalf("no rebuild after an earlier version folded: %v, %v", rebuilt, err)
	}
	if err := s.FoldSlot(ctx, halfway, nil); err != nil {
		t.Fatal(err)
	}
	checkRanges(t, s, end, rng, func(link string) []dayRecord { return storedRecords(t, s, link) })
	if got, _ := s.LinkAnalytics(ctx, "L1", "abc", end.AddDate(0, 0, -364), end); got.TotalClicks < 300 {
		t.Fatalf("a year of L1 has %d clicks", got.TotalClicks)
	}
}
