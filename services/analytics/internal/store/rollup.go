package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Rollup ids in the rollups collection; the prefixes keep each kind in its own _id range,
// which is how a link's days and months are read and purged.
func dayRollup(link, day string) string     { return "d|" + link + "|" + day }
func monthRollup(link, month string) string { return "m|" + link + "|" + month }
func linkRollup(link string) string         { return "l|" + link }
func ownerRollup(owner string) string       { return "o|" + owner }

const globalAll = "g|all"

// hourID is the id of the global total of the hour t falls in.
func hourID(t time.Time) string {
	return "g|hour:" + strconv.FormatInt(t.UnixMilli()/time.Hour.Milliseconds(), 10)
}

// guardWindow is how many batches each rollup remembers having added (the newest ones):
// a batch applied again adds nothing to a rollup that still remembers it. The hottest
// rollups (the global totals, a viral link's day) take one batch per consumer and
// FlushInterval (pipeline.FlushInterval, 250 ms), so the window spans guardWindow/(4·R)
// seconds with R consumers: 125 s with four, 62 s with eight. A batch
// that failed part-way must be applied again within that: its own consumer retries at once
// and carries a batch it began through a shutdown; when that consumer died, another one
// claims its stream entries after the worker's ClaimMinIdle plus ClaimInterval (40 s), or
// the recovery pass finds it (pipeline.RecoverInterval after SealAge, 40 s). A hot rollup
// carries about 36 KB of batch ids.
const guardWindow = 2000

// Breakdown fields of a rollup, with the click value each counts.
var breakdowns = []struct {
	field string
	of    func(*clickDoc) string
}{
	{"countries", func(c *clickDoc) string { return c.Country }},
	{"referrers", func(c *clickDoc) string { return c.Referrer }},
	{"devices", func(c *clickDoc) string { return c.DeviceType }},
	{"browsers", func(c *clickDoc) string { return c.Browser }},
	{"oss", func(c *clickDoc) string { return c.OS }},
}

// tally is what a set of clicks adds to the rollups, by rollup id.
type tally map[string]*rollupAdd

// rollupAdd is what a tally adds to one rollup: fields set and fields incremented.
type rollupAdd struct {
	set   bson.D
	inc   map[string]int64
	order []string // inc's fields in the order first added, so a write is the same whatever the map order
}

func (t tally) doc(id string, set bson.D) *rollupAdd {
	r := t[id]
	if r == nil {
		r = &rollupAdd{set: set, inc: map[string]int64{}}
		t[id] = r
	}
	return r
}

func (r *rollupAdd) add(field string, n int64) {
	if _, ok := r.inc[field]; !ok {
		r.order = append(r.order, field)
	}
	r.inc[field] += n
}

// addDay adds clicks and visitors of link on day, with their breakdowns (field → value →
// clicks), to the link's day, month and total.
func (t tally) addDay(link, owner, day string, clicks, visitors int64, breakdown func(add func(field, value string, n int64))) {
	month, dd := day[:7], day[8:]
	withOwner := func(set bson.D) bson.D {
		if owner != "" {
			set = append(set, bson.E{Key: "owner_id", Value: owner})
		}
		return set
	}
	d := t.doc(dayRollup(link, day), withOwner(bson.D{{Key: "link_id", Value: link}, {Key: "day", Value: day}}))
	m := t.doc(monthRollup(link, month), withOwner(bson.D{{Key: "link_id", Value: link}, {Key: "month", Value: month}}))
	for _, r := range []*rollupAdd{d, m} {
		r.add("clicks", clicks)
		if visitors != 0 {
			r.add("unique_visitors", visitors)
		}
	}
	m.add("days."+dd, clicks)
	if visitors != 0 {
		m.add("visitors."+dd, visitors)
	}
	breakdown(func(field, value string, n int64) {
		d.add(field+"."+escapeKey(value), n)
		m.add(field+"."+escapeKey(value), n)
	})
	t.doc(linkRollup(link), withOwner(bson.D{{Key: "link_id", Value: link}})).add("clicks", clicks)
}

// addClick adds one click, a new visitor or not, to every rollup it counts in.
func (t tally) addClick(c *clickDoc, newVisitor bool) {
	var v int64
	if newVisitor {
		v = 1
	}
	t.addDay(c.LinkID, c.OwnerID, c.Day, 1, v, func(add func(field, value string, n int64)) {
		for _, b := range breakdowns {
			add(b.field, b.of(c), 1)
		}
	})
	if c.OwnerID != "" {
		t.doc(ownerRollup(c.OwnerID), nil).add("clicks", 1)
	}
	t.doc(globalAll, nil).add("clicks", 1)
	t.doc(hourID(c.ClickedAt), nil).add("clicks", 1)
}

// models are the tally's $inc upserts, in id order. With a batch, each is guarded by it: it
// adds nothing to a rollup that already holds the batch (the filter misses, and the upsert
// then meets the existing _id: a duplicate key), and records the batch in the rollup's guard
// window. A duplicate key also answers an upsert that lost a race to create the rollup
// (MongoDB retries such a loser itself only when the filter is an equality on the unique
// key, which a guarded filter is not); write tells the two apart.
func (t tally) models(batch *bson.ObjectID) []mongo.WriteModel {
	ids := make([]string, 0, len(t))
	for id := range t {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]mongo.WriteModel, 0, len(ids))
	for _, id := range ids {
		r := t[id]
		inc := make(bson.D, 0, len(r.order))
		for _, f := range r.order {
			inc = append(inc, bson.E{Key: f, Value: r.inc[f]})
		}
		filter := bson.D{{Key: "_id", Value: id}}
		update := bson.D{{Key: "$inc", Value: inc}}
		if len(r.set) > 0 {
			update = append(update, bson.E{Key: "$set", Value: r.set})
		}
		if batch != nil {
			filter = append(filter, bson.E{Key: "applied", Value: bson.D{{Key: "$ne", Value: *batch}}})
			update = append(update, bson.E{Key: "$push", Value: bson.D{{Key: "applied", Value: bson.D{
				{Key: "$each", Value: bson.A{*batch}}, {Key: "$slice", Value: -guardWindow}}}}})
		}
		out = append(out, mongo.NewUpdateOneModel().SetFilter(filter).SetUpdate(update).SetUpsert(true))
	}
	return out
}

// write applies models in one unordered bulkWrite, not in parts written at once as Insert
// does: many concurrent upserts of distinct new documents crashed the embedded store's
// server process (DocumentDB 0.108). A model answered with a duplicate key is written once
// more: the rollup exists by then, so the second try either finds it without the batch and
// adds to it (the first try lost the race to create it), or misses again because the
// rollup holds the batch — a second duplicate key, which means done.
func (s *Store) write(ctx context.Context, models []mongo.WriteModel) error {
	for try := 1; len(models) > 0; try++ {
		_, err := s.rollups.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
		if err == nil || try == 2 && isOnlyDuplicates(err) {
			return nil
		}
		var bwe mongo.BulkWriteException
		if try == 2 || !errors.As(err, &bwe) || !isOnlyDuplicates(err) {
			return fmt.Errorf("write rollups: %w", err)
		}
		again := make([]mongo.WriteModel, 0, len(bwe.WriteErrors))
		for _, we := range bwe.WriteErrors {
			again = append(again, models[we.Index])
		}
		models = again
	}
	return nil
}

// isOnlyDuplicates tells a bulkWrite error made of duplicate keys alone.
func isOnlyDuplicates(err error) bool {
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return false
	}
	for _, we := range bwe.WriteErrors {
		if !mongo.IsDuplicateKeyError(we) {
			return false
		}
	}
	return true
}

// Seed adds to the rollups of linkID for day what clicks visits by visitors visitors would
// have added, spread over the breakdown values given; for loads in tests and benchmarks (see
// analyticstest), never called by the service. Owner and global totals are left alone.
func (s *Store) Seed(ctx context.Context, linkID, ownerID, day string, clicks, visitors int64, breakdown map[string]map[string]int64) error {
	t := tally{}
	t.addDay(linkID, ownerID, day, clicks, visitors, func(add func(field, value string, n int64)) {
		for f, m := range breakdown {
			for v, n := range m {
				add(f, v, n)
			}
		}
	})
	return s.write(ctx, t.models(nil))
}
