package store

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The monthly rollups answer a link's analytics in a few reads whatever the days asked for.
// A read of the daily rollups costs per document returned (FerretDB filters a day range
// after reading every rollup of the link, then converts each document: 365 of them took
// 55 ms), so the answer reads months instead: link_monthly, "<link>|<YYYY-MM>", holds the
// month's clicks, visitors and breakdowns, and each day's clicks ("days.DD") and visitors
// ("visitors.DD"), under owner, link, month and year fields, read by link and year: one or
// two reads for any range of up to 365 days. The breakdowns of a month the range cuts through
// on a day with clicks come from that month's daily rollups, read by link and month (two
// equalities, which FerretDB filters in PostgreSQL).
//
// Per-day breakdowns stay in the daily rollups, not in the month's document: FerretDB
// rewrites a whole document on every update, and each slot updates the rollups of every
// link clicked in it, so a month's document must stay small.
//
// The monthly rollups are written by the fold's leader alone (the fold, and BuildMonthly
// when they lag the fold), marked with the slot like every rollup.
const Monthly = "link_monthly"

// monthOf splits "YYYY-MM-DD" into its month "YYYY-MM", year "YYYY" and day of month "DD".
func monthOf(day string) (month, year, dd string) { return day[:7], day[:4], day[8:] }

// monthID names the monthly rollups of link in month.
func monthID(link, month string) string { return link + "|" + month }

// monthDoc is a link_monthly document.
type monthDoc struct {
	ID             string           `bson:"_id"`
	LinkID         string           `bson:"link_id"`
	OwnerID        string           `bson:"owner_id,omitempty"`
	Month          string           `bson:"month"`
	Year           string           `bson:"year"`
	LastSlot       int64            `bson:"last_slot"`
	Clicks         int64            `bson:"clicks"`
	UniqueVisitors int64            `bson:"unique_visitors"`
	Days           map[string]int64 `bson:"days"`
	Visitors       map[string]int64 `bson:"visitors"`
	Breakdowns     `bson:",inline"`
}

// Breakdowns is the clicks per value of each breakdown, keys escaped (escapeKey).
type Breakdowns struct {
	Countries map[string]int64 `bson:"countries,omitempty"`
	Referrers map[string]int64 `bson:"referrers,omitempty"`
	Devices   map[string]int64 `bson:"devices,omitempty"`
	Browsers  map[string]int64 `bson:"browsers,omitempty"`
	OSs       map[string]int64 `bson:"oss,omitempty"`
}

// fields are the breakdowns by their field names, as the rollups store them.
func (b *Breakdowns) fields() map[string]*map[string]int64 {
	return map[string]*map[string]int64{"countries": &b.Countries, "referrers": &b.Referrers, "devices": &b.Devices, "browsers": &b.Browsers, "oss": &b.OSs}
}

// add adds o's clicks to b's.
func (b *Breakdowns) add(o Breakdowns) {
	mine := b.fields()
	for f, theirs := range o.fields() {
		for k, n := range *theirs {
			if *mine[f] == nil {
				*mine[f] = map[string]int64{}
			}
			(*mine[f])[k] += n
		}
	}
}

// monthFold gathers what one slot adds to the monthly rollups: a rollup may be written
// once per slot (addOnce), so the days of one month are added up first.
type monthFold map[string]*monthAdd

// monthAdd is what a slot adds to one month of one link.
type monthAdd struct {
	set      bson.D // link, month and year, and the owner where a day named it
	inc      map[string]int64
	incOrder []string // the fields of inc in the order first added, so that a write is the same whatever the map order
}

// add adds r, one link's day in the slot.
func (f monthFold) add(r *rollup) {
	month, year, dd := monthOf(r.day)
	id := monthID(r.link, month)
	m := f[id]
	if m == nil {
		m = &monthAdd{inc: map[string]int64{}, set: bson.D{{Key: "link_id", Value: r.link}, {Key: "month", Value: month}, {Key: "year", Value: year}}}
		f[id] = m
	}
	if r.owner != "" && len(m.set) == 3 {
		m.set = append(m.set, bson.E{Key: "owner_id", Value: r.owner})
	}
	m.incr("clicks", r.clicks)
	m.incr("unique_visitors", r.visitors)
	m.incr("days."+dd, r.clicks)
	m.incr("visitors."+dd, r.visitors)
	for _, b := range breakdowns {
		for v, n := range r.breakdown[b.field] {
			m.incr(b.field+"."+escapeKey(v), n)
		}
	}
}

func (m *monthAdd) incr(field string, n int64) {
	if _, ok := m.inc[field]; !ok {
		m.incOrder = append(m.incOrder, field)
	}
	m.inc[field] += n
}

// write adds the slot's share to the monthly rollups, once per slot each (see addOnce).
func (f monthFold) write(ctx context.Context, s *Store, slot int64) error {
	return f.each(func(id string, inc, set bson.D) error { return s.addOnce(ctx, s.monthly, id, slot, inc, set) })
}

// seed adds to the monthly rollups unguarded, for Seed: its days are no slots. A rollup it
// creates holds slot 0, so that the fold adds to it; one the fold wrote keeps its slot.
func (f monthFold) seed(ctx context.Context, s *Store) error {
	return f.each(func(id string, inc, set bson.D) error {
		update := bson.D{{Key: "$inc", Value: inc}, {Key: "$set", Value: set}, {Key: "$setOnInsert", Value: bson.D{{Key: "last_slot", Value: int64(0)}}}}
		_, err := s.monthly.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, update, options.UpdateOne().SetUpsert(true))
		return err
	})
}

// each calls write with every month's id, increments and fields.
func (f monthFold) each(write func(id string, inc, set bson.D) error) error {
	for id, m := range f {
		inc := make(bson.D, 0, len(m.incOrder))
		for _, k := range m.incOrder {
			inc = append(inc, bson.E{Key: k, Value: m.inc[k]})
		}
		if err := write(id, inc, m.set); err != nil {
			return err
		}
	}
	return nil
}

// monthlyNext is the field of the fold's state holding the first slot not yet in the
// monthly rollups. The fold moves it with next_slot; a version without monthly rollups
// moves next_slot alone (and, before them, there was no such field).
const monthlyNext = "monthly_next"

// BuildMonthly rebuilds the monthly rollups from the daily ones when they lag the fold:
// after an upgrade from a version without them, or when such a version (an old replica in a
// rolling update, a rollback) folded meanwhile. Otherwise it costs one read. Each month is
// written whole from its days and marked as holding the slots before next_slot, unless a
// newer fold has written it since (a deposed leader's late write changes nothing). Slot
// next_slot itself may be half folded into the daily rollups by a version that stopped in
// the middle of it: its share is taken out of the days that hold it, so that the fold of
// next_slot that follows adds it to each month once. Then monthly_next is recorded, unless
// next_slot moved meanwhile (the next call rebuilds again). Only the fold's leader calls it,
// before folding; clicks of the links in purged are left out, as the fold leaves them out.
// It reports whether it rebuilt, and how many links.
func (s *Store) BuildMonthly(ctx context.Context, purged map[string]bool) (rebuilt bool, links int, err error) {
	st, err := s.readFoldState(ctx)
	if err != nil {
		return false, 0, err
	}
	if st.Monthly != nil && *st.Monthly == st.Next {
		return false, 0, nil
	}
	partial, _, _, err := s.slotRollups(ctx, st.Next, purged)
	if err != nil {
		return false, 0, err
	}
	// Every link with daily rollups has a total (the fold writes both; a purge deletes both).
	cur, err := s.links.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return false, 0, fmt.Errorf("list links for monthly rollups: %w", err)
	}
	var all []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &all); err != nil {
		return false, 0, fmt.Errorf("list links for monthly rollups: %w", err)
	}
	for _, l := range all {
		if purged[l.ID] {
			continue
		}
		if err := s.buildLinkMonths(ctx, l.ID, st.Next, partial); err != nil {
			return false, links, err
		}
		links++
	}
	if _, err := s.state.UpdateOne(ctx, bson.D{{Key: "_id", Value: foldID}, {Key: "next_slot", Value: st.Next}},
		bson.D{{Key: "$set", Value: bson.D{{Key: monthlyNext, Value: st.Next}}}}); err != nil {
		return false, links, fmt.Errorf("record monthly rollups built: %w", err)
	}
	return true, links, nil
}

// buildLinkMonths writes the monthly rollups of link from its daily ones as they stood
// before slot next: partial holds slot next's share by "<link>|<day>", taken out of a day
// that already holds it.
func (s *Store) buildLinkMonths(ctx context.Context, link string, next int64, partial map[string]*rollup) error {
	cur, err := s.daily.Find(ctx, bson.D{{Key: "link_id", Value: link}})
	if err != nil {
		return fmt.Errorf("read daily rollups of %s: %w", link, err)
	}
	stamp := map[string]string{} // daily rollup → its month, where it lacks the field
	var days []struct {
		ID             string `bson:"_id"`
		Day            string `bson:"day"`
		Month          string `bson:"month"`
		OwnerID        string `bson:"owner_id"`
		Clicks         int64  `bson:"clicks"`
		UniqueVisitors int64  `bson:"unique_visitors"`
		LastSlot       int64  `bson:"last_slot"`
		Breakdowns     `bson:",inline"`
	}
	if err := cur.All(ctx, &days); err != nil {
		return fmt.Errorf("read daily rollups of %s: %w", link, err)
	}
	months := map[string]*monthDoc{}
	for _, d := range days {
		if len(d.Day) != len(time.DateOnly) {
			continue
		}
		if r := partial[link+"|"+d.Day]; r != nil && d.LastSlot >= next {
			d.Clicks -= r.clicks
			d.UniqueVisitors -= r.visitors
			var less Breakdowns
			for f, m := range less.fields() {
				*m = map[string]int64{}
				for v, n := range r.breakdown[f] {
					(*m)[escapeKey(v)] = -n
				}
			}
			d.Breakdowns.add(less)
		}
		month, year, dd := monthOf(d.Day)
		id := monthID(link, month)
		m := months[id]
		if m == nil {
			m = &monthDoc{ID: id, LinkID: link, Month: month, Year: year, LastSlot: next - 1, Days: map[string]int64{}, Visitors: map[string]int64{}}
			months[id] = m
		}
		if d.OwnerID != "" {
			m.OwnerID = d.OwnerID
		}
		m.Clicks += d.Clicks
		m.UniqueVisitors += d.UniqueVisitors
		m.Days[dd] += d.Clicks
		m.Visitors[dd] += d.UniqueVisitors
		m.add(d.Breakdowns)
		if d.Month != month {
			stamp[d.ID] = month
		}
	}
	// Daily rollups of versions before the monthly ones have no month field, by which the
	// answer reads the days of a month the range cuts through.
	for id, month := range stamp {
		if _, err := s.daily.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "month", Value: month}}}}); err != nil {
			return fmt.Errorf("mark the month of daily rollup %s: %w", id, err)
		}
	}
	for id, m := range months {
		if err := s.replaceBefore(ctx, s.monthly, id, next, m); err != nil {
			return err
		}
	}
	return nil
}

// replaceBefore writes doc as rollup id unless a fold of slot next or later wrote it.
func (s *Store) replaceBefore(ctx context.Context, coll *mongo.Collection, id string, next int64, doc any) error {
	_, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "last_slot", Value: bson.D{{Key: "$lt", Value: next}}}}, doc, options.Replace().SetUpsert(true))
	if err != nil && !mongo.IsDuplicateKeyError(err) { // a duplicate: a newer fold holds it
		return fmt.Errorf("write %s %s: %w", coll.Name(), id, err)
	}
	return nil
}

// monthsOf reads the monthly rollups of link in the years from fromYear to toYear.
func (s *Store) monthsOf(ctx context.Context, link string, fromYear, toYear int) ([]monthDoc, error) {
	var out []monthDoc
	for y := fromYear; y <= toYear; y++ {
		// Two equalities: FerretDB filters them in PostgreSQL, with the index.
		cur, err := s.monthly.Find(ctx, bson.D{{Key: "link_id", Value: link}, {Key: "year", Value: fmt.Sprintf("%04d", y)}})
		if err != nil {
			return nil, fmt.Errorf("read monthly rollups: %w", err)
		}
		var docs []monthDoc
		if err := cur.All(ctx, &docs); err != nil {
			return nil, fmt.Errorf("read monthly rollups: %w", err)
		}
		out = append(out, docs...)
	}
	return out, nil
}

// daysOfMonth reads the breakdowns of each day of link in month, by "DD", from the daily
// rollups.
func (s *Store) daysOfMonth(ctx context.Context, link, month string) (map[string]Breakdowns, error) {
	cur, err := s.daily.Find(ctx, bson.D{{Key: "link_id", Value: link}, {Key: "month", Value: month}})
	if err != nil {
		return nil, fmt.Errorf("read daily rollups of %s: %w", month, err)
	}
	var docs []struct {
		Day        string `bson:"day"`
		Breakdowns `bson:",inline"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read daily rollups of %s: %w", month, err)
	}
	out := make(map[string]Breakdowns, len(docs))
	for _, d := range docs {
		if len(d.Day) == len(time.DateOnly) {
			_, _, dd := monthOf(d.Day)
			out[dd] = d.Breakdowns
		}
	}
	return out, nil
}
