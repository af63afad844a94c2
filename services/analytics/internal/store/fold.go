package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// foldID is the analytics_state document holding the next slot to fold.
const foldID = "fold"

// foldState is the fold's position: the first slot not folded, and the first not yet in
// the monthly rollups (nil where a version without them wrote the state).
type foldState struct {
	Next    int64  `bson:"next_slot"`
	Monthly *int64 `bson:"monthly_next"`
}

// readFoldState reads the fold's position; mongo.ErrNoDocuments before the first fold.
func (s *Store) readFoldState(ctx context.Context) (foldState, error) {
	var st foldState
	err := s.state.FindOne(ctx, bson.D{{Key: "_id", Value: foldID}}).Decode(&st)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		err = fmt.Errorf("read fold state: %w", err)
	}
	return st, err
}

// NextSlot is the first slot not folded yet. The first call ever starts at start.
func (s *Store) NextSlot(ctx context.Context, start int64) (int64, error) {
	st, err := s.readFoldState(ctx)
	if errors.Is(err, mongo.ErrNoDocuments) {
		_, err = s.state.InsertOne(ctx, bson.D{{Key: "_id", Value: foldID}, {Key: "next_slot", Value: start}, {Key: monthlyNext, Value: start}})
		if err != nil && !mongo.IsDuplicateKeyError(err) {
			return 0, fmt.Errorf("start fold state: %w", err)
		}
		return s.NextSlot(ctx, start)
	}
	return st.Next, err
}

// FoldedUntil is the end of the last slot folded: every click stored before it is in the
// rollups, and so in the answers. Zero before the first fold.
func (s *Store) FoldedUntil(ctx context.Context) (time.Time, error) {
	st, err := s.readFoldState(ctx)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(st.Next * SlotLength.Milliseconds()), nil
}

// rollup is what one slot adds to one document.
type rollup struct {
	clicks, visitors int64
	owner, link, day string
	breakdown        map[string]map[string]int64 // field → value → clicks
}

// Breakdown fields of a rollup, with the click value each counts.
var breakdowns = []struct {
	field string
	of    func(clickDoc) string
}{
	{"countries", func(c clickDoc) string { return c.Country }},
	{"referrers", func(c clickDoc) string { return c.Referrer }},
	{"devices", func(c clickDoc) string { return c.DeviceType }},
	{"browsers", func(c clickDoc) string { return c.Browser }},
	{"oss", func(c clickDoc) string { return c.OS }},
}

// dailyUpdate is what r, one link's day in a slot, adds to its daily rollup and the fields
// it sets there.
func (r *rollup) dailyUpdate() (inc, set bson.D) {
	inc = bson.D{{Key: "clicks", Value: r.clicks}, {Key: "unique_visitors", Value: r.visitors}}
	for _, b := range breakdowns {
		for v, n := range r.breakdown[b.field] {
			inc = append(inc, bson.E{Key: b.field + "." + escapeKey(v), Value: n})
		}
	}
	set = bson.D{{Key: "link_id", Value: r.link}, {Key: "day", Value: r.day}, {Key: "month", Value: r.day[:7]}}
	if r.owner != "" {
		set = append(set, bson.E{Key: "owner_id", Value: r.owner})
	}
	return inc, set
}

// slotRollups adds up the clicks and visitors stored in slot, but those of the links in
// purged: by link and day ("<link>|<day>"), by link, and by owner.
func (s *Store) slotRollups(ctx context.Context, slot int64, purged map[string]bool) (days, links, owners map[string]*rollup, err error) {
	cur, err := s.clicks.Find(ctx, bson.D{{Key: "slot", Value: slot}})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read slot clicks: %w", err)
	}
	var clicks []clickDoc
	if err := cur.All(ctx, &clicks); err != nil {
		return nil, nil, nil, fmt.Errorf("read slot clicks: %w", err)
	}
	cur, err = s.visitors.Find(ctx, bson.D{{Key: "slot", Value: slot}})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read slot visitors: %w", err)
	}
	var visitors []visitorDoc
	if err := cur.All(ctx, &visitors); err != nil {
		return nil, nil, nil, fmt.Errorf("read slot visitors: %w", err)
	}
	days, links, owners = map[string]*rollup{}, map[string]*rollup{}, map[string]*rollup{}
	dayOf := func(link, day string) *rollup {
		k := link + "|" + day
		r := days[k]
		if r == nil {
			r = &rollup{link: link, day: day, breakdown: map[string]map[string]int64{}}
			days[k] = r
		}
		return r
	}
	for _, c := range clicks {
		if purged[c.LinkID] {
			continue
		}
		d := dayOf(c.LinkID, c.Day)
		d.clicks++
		d.owner = c.OwnerID
		for _, b := range breakdowns {
			m := d.breakdown[b.field]
			if m == nil {
				m = map[string]int64{}
				d.breakdown[b.field] = m
			}
			m[b.of(c)]++
		}
		l := links[c.LinkID]
		if l == nil {
			l = &rollup{link: c.LinkID, owner: c.OwnerID}
			links[c.LinkID] = l
		}
		l.clicks++
		if c.OwnerID != "" {
			o := owners[c.OwnerID]
			if o == nil {
				o = &rollup{owner: c.OwnerID}
				owners[c.OwnerID] = o
			}
			o.clicks++
		}
	}
	for _, v := range visitors {
		if !purged[v.LinkID] {
			dayOf(v.LinkID, v.Day).visitors++
		}
	}
	return days, links, owners, nil
}

// FoldSlot adds the clicks and visitors stored in slot to the rollups, then records that
// the next slot is slot+1. Each rollup it touches remembers the slot, so folding a slot
// again (after a crash between two documents) adds nothing twice. Only one caller may fold
// at a time (see Folder); the slot must be closed, i.e. no click can be stored in it
// anymore. Clicks of the links in purged are left out.
func (s *Store) FoldSlot(ctx context.Context, slot int64, purged map[string]bool) error {
	days, links, owners, err := s.slotRollups(ctx, slot, purged)
	if err != nil {
		return err
	}
	// The daily rollups: each day's breakdowns, read for a month a range cuts through; kept
	// whole, also so that a version before the monthly ones, running beside this one during a
	// rolling update or after a rollback, finds them so, and so that the monthly ones can
	// always be rebuilt from them (see BuildMonthly).
	for id, r := range days {
		inc, set := r.dailyUpdate()
		if err := s.addOnce(ctx, s.daily, id, slot, inc, set); err != nil {
			return err
		}
	}
	months := monthFold{}
	for _, r := range days {
		months.add(r)
	}
	if err := months.write(ctx, s, slot); err != nil {
		return err
	}
	for id, r := range links {
		if err := s.addOnce(ctx, s.links, id, slot, bson.D{{Key: "clicks", Value: r.clicks}}, bson.D{{Key: "owner_id", Value: r.owner}}); err != nil {
			return err
		}
	}
	for id, r := range owners {
		if err := s.addOnce(ctx, s.owners, id, slot, bson.D{{Key: "clicks", Value: r.clicks}}, nil); err != nil {
			return err
		}
	}
	var all int64
	for _, r := range links {
		all += r.clicks
	}
	if all > 0 {
		for _, id := range []string{globalAll, hourID(slot)} {
			if err := s.addOnce(ctx, s.global, id, slot, bson.D{{Key: "clicks", Value: all}}, nil); err != nil {
				return err
			}
		}
	}
	// monthly_next moves with next_slot: a fold by a version without monthly rollups moves
	// next_slot alone, which tells the next fold here to rebuild them (BuildMonthly).
	if _, err := s.state.UpdateOne(ctx, bson.D{{Key: "_id", Value: foldID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "next_slot", Value: slot + 1}, {Key: monthlyNext, Value: slot + 1}}}}); err != nil {
		return fmt.Errorf("advance fold: %w", err)
	}
	return nil
}

// addOnce adds inc to document id unless it already holds slot's share, and records slot.
func (s *Store) addOnce(ctx context.Context, coll *mongo.Collection, id string, slot int64, inc, set bson.D) error {
	set = append(set, bson.E{Key: "last_slot", Value: slot})
	filter := bson.D{{Key: "_id", Value: id}, {Key: "last_slot", Value: bson.D{{Key: "$lt", Value: slot}}}}
	update := bson.D{{Key: "$inc", Value: inc}, {Key: "$set", Value: set}}
	_, err := coll.UpdateOne(ctx, filter, update, options.UpdateOne().SetUpsert(true))
	if mongo.IsDuplicateKeyError(err) {
		return nil // the document exists and already holds this slot
	}
	if err != nil {
		return fmt.Errorf("fold into %s: %w", coll.Name(), err)
	}
	return nil
}

// PurgedLinks are the links whose analytics were purged: none of their clicks is folded
// again, whatever the stream still delivers.
func (s *Store) PurgedLinks(ctx context.Context) (map[string]bool, error) {
	cur, err := s.purged.Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("read purged links: %w", err)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read purged links: %w", err)
	}
	out := make(map[string]bool, len(docs))
	for _, d := range docs {
		out[d.ID] = true
	}
	return out, nil
}

// DeleteOlderThan deletes raw clicks and visitors stored before cutoff; the rollups keep
// their counts.
func (s *Store) DeleteOlderThan(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.clicks.DeleteMany(ctx, bson.D{{Key: "clicked_at", Value: bson.D{{Key: "$lt", Value: cutoff.UTC()}}}})
	if err != nil {
		return 0, fmt.Errorf("delete old clicks: %w", err)
	}
	n := res.DeletedCount
	res, err = s.visitors.DeleteMany(ctx, bson.D{{Key: "slot", Value: bson.D{{Key: "$lt", Value: Slot(cutoff)}}}})
	if err != nil {
		return n, fmt.Errorf("delete old visitors: %w", err)
	}
	return n + res.DeletedCount, nil
}

// Purge deletes every click, visitor, daily and monthly rollup of linkID and leaves a tombstone, so
// that nothing the stream still delivers for it is counted again. Its totals belong to the
// fold (the only writer of totals), which settles them with ApplyPurges. Purging again does
// nothing more.
func (s *Store) Purge(ctx context.Context, linkID string) error {
	_, err := s.purged.InsertOne(ctx, bson.D{{Key: "_id", Value: linkID}, {Key: "applied", Value: 0}, {Key: "at", Value: time.Now().UTC()}})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("purge %s: %w", linkID, err)
	}
	for _, coll := range []*mongo.Collection{s.clicks, s.visitors, s.daily, s.monthly} {
		if _, err := coll.DeleteMany(ctx, bson.D{{Key: "link_id", Value: linkID}}); err != nil {
			return fmt.Errorf("purge %s from %s: %w", linkID, coll.Name(), err)
		}
	}
	return nil
}

// ApplyPurges takes each purged link's total out of its owner's total and deletes it and
// any daily or monthly rollup of the link a fold wrote since the purge. Each
// step is guarded, so a crash between them is healed by the next call. Only the fold's
// leader calls it.
func (s *Store) ApplyPurges(ctx context.Context) error {
	cur, err := s.purged.Find(ctx, bson.D{{Key: "applied", Value: 0}})
	if err != nil {
		return fmt.Errorf("read purges: %w", err)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return fmt.Errorf("read purges: %w", err)
	}
	for _, p := range docs {
		var total struct {
			Clicks  int64  `bson:"clicks"`
			OwnerID string `bson:"owner_id"`
		}
		err := s.links.FindOne(ctx, bson.D{{Key: "_id", Value: p.ID}}).Decode(&total)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return fmt.Errorf("read purged total: %w", err)
		}
		if err == nil && total.OwnerID != "" && total.Clicks != 0 {
			mark := "purged." + escapeKey(p.ID)
			if _, err := s.owners.UpdateOne(ctx,
				bson.D{{Key: "_id", Value: total.OwnerID}, {Key: mark, Value: bson.D{{Key: "$exists", Value: false}}}},
				bson.D{{Key: "$inc", Value: bson.D{{Key: "clicks", Value: -total.Clicks}}}, {Key: "$set", Value: bson.D{{Key: mark, Value: 1}}}}); err != nil {
				return fmt.Errorf("take purged total from owner: %w", err)
			}
		}
		if err == nil && total.Clicks != 0 {
			// One purge at a time (the leader's loop), so the last one applied is guard
			// enough against a retry taking it twice, in a field that does not grow.
			if _, err := s.global.UpdateOne(ctx,
				bson.D{{Key: "_id", Value: globalAll}, {Key: "last_purge", Value: bson.D{{Key: "$ne", Value: p.ID}}}},
				bson.D{{Key: "$inc", Value: bson.D{{Key: "clicks", Value: -total.Clicks}}}, {Key: "$set", Value: bson.D{{Key: "last_purge", Value: p.ID}}}}); err != nil {
				return fmt.Errorf("take purged total from the global total: %w", err)
			}
		}
		if _, err := s.links.DeleteOne(ctx, bson.D{{Key: "_id", Value: p.ID}}); err != nil {
			return fmt.Errorf("delete purged total: %w", err)
		}
		// A fold that read the purged links just before the purge may have written its
		// rollups again; only the leader runs this, after such a fold.
		for _, coll := range []*mongo.Collection{s.daily, s.monthly} {
			if _, err := coll.DeleteMany(ctx, bson.D{{Key: "link_id", Value: p.ID}}); err != nil {
				return fmt.Errorf("delete purged rollups from %s: %w", coll.Name(), err)
			}
		}
		if _, err := s.purged.UpdateOne(ctx, bson.D{{Key: "_id", Value: p.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "applied", Value: 1}}}}); err != nil {
			return fmt.Errorf("mark purge applied: %w", err)
		}
	}
	return nil
}

// Seed writes the rollups of linkID for day as the fold would have left them after clicks
// visits by visitors visitors, spread over the breakdown values given; for loads in tests and
// benchmarks (see analyticstest), never called by the service. Seed a day once: its month's
// rollup adds it.
func (s *Store) Seed(ctx context.Context, linkID, ownerID, day string, clicks, visitors int64, breakdown map[string]map[string]int64) error {
	set := bson.D{{Key: "link_id", Value: linkID}, {Key: "owner_id", Value: ownerID}, {Key: "day", Value: day}, {Key: "month", Value: day[:min(7, len(day))]},
		{Key: "clicks", Value: clicks}, {Key: "unique_visitors", Value: visitors}, {Key: "last_slot", Value: int64(0)}}
	for field, m := range breakdown {
		sub := bson.D{}
		for v, n := range m {
			sub = append(sub, bson.E{Key: escapeKey(v), Value: n})
		}
		set = append(set, bson.E{Key: field, Value: sub})
	}
	if _, err := s.daily.UpdateOne(ctx, bson.D{{Key: "_id", Value: linkID + "|" + day}}, bson.D{{Key: "$set", Value: set}}, options.UpdateOne().SetUpsert(true)); err != nil {
		return fmt.Errorf("seed daily rollup: %w", err)
	}
	months := monthFold{}
	months.add(&rollup{link: linkID, owner: ownerID, day: day, clicks: clicks, visitors: visitors, breakdown: breakdown})
	if err := months.seed(ctx, s); err != nil {
		return fmt.Errorf("seed monthly rollups: %w", err)
	}
	_, err := s.links.UpdateOne(ctx, bson.D{{Key: "_id", Value: linkID}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "clicks", Value: clicks}}}, {Key: "$set", Value: bson.D{{Key: "owner_id", Value: ownerID}}}}, options.UpdateOne().SetUpsert(true))
	if err != nil {
		return fmt.Errorf("seed link total: %w", err)
	}
	return nil
}

// globalAll is the id of the all-time total in GlobalTotals.
const globalAll = "all"

// hourID is the id of the hourly total of the hour slot falls in.
func hourID(slot int64) string {
	return "hour:" + strconv.FormatInt(slot*SlotLength.Milliseconds()/time.Hour.Milliseconds(), 10)
}

// Totals are every link's clicks, all time and in the current hour and the 23 before it, as
// folded so far (the fold trails the stream by its grace). Two reads of one small
// collection, whatever the number of links and clicks. A purged link's clicks leave the
// all-time total; the hourly ones age out within a day.
func (s *Store) Totals(ctx context.Context, now time.Time) (analytics.Totals, error) {
	var out analytics.Totals
	var all struct {
		Clicks int64 `bson:"clicks"`
	}
	err := s.global.FindOne(ctx, bson.D{{Key: "_id", Value: globalAll}}).Decode(&all)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return out, fmt.Errorf("read click total: %w", err)
	}
	out.Total = all.Clicks
	hours := make(bson.A, 0, 24)
	for i := range int64(24) {
		hours = append(hours, hourID(Slot(now.Add(-time.Duration(i)*time.Hour))))
	}
	cur, err := s.global.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: hours}}}})
	if err != nil {
		return out, fmt.Errorf("read hourly totals: %w", err)
	}
	var docs []struct {
		Clicks int64 `bson:"clicks"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return out, fmt.Errorf("read hourly totals: %w", err)
	}
	for _, d := range docs {
		out.Last24h += d.Clicks
	}
	return out, nil
}
