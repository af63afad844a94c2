package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// The counters of links by state. Counting 100,000 links on FerretDB takes seconds (every
// count reads every document), so the admin overview reads counters instead, kept exact
// without two writers ever updating one document:
//
//   - every write of a link goes through apply: it records the change first, under the
//     link's next revision (a unique id, so two concurrent writers cannot both claim it),
//     with the class the link leaves and the class it enters (links.Link.Class), then
//     writes the link conditionally on its current revision;
//   - the writer marks the change done once its write happened; one folder (the replica
//     holding a Redis lease) takes the done changes and adds them to the counters through a
//     write-ahead batch, so that a crash half way never adds twice, and settles changes whose
//     writer died from the link's revision;
//   - links that expire are counted per expiry minute; as minutes pass, the folder moves
//     them from "scheduled" to "expired".
//
// The counters trail the links by the fold's interval (a second) and count a link expired
// within a minute of its expiry.
const (
	changesCollection = "link_changes"
	countsCollection  = "link_counts"
	countsAll         = "all"
	countsWAL         = "batch"
	// changeLease is how long a recorded change may wait for its write before the folder
	// decides the write never happened (its writer failed or died).
	changeLease = time.Minute
	// changeRetries bounds the retries of a write that lost its revision to another.
	changeRetries = 4
	// maxBatch bounds the changes of one batch, about: FerretDB deletes many documents with
	// one query parameter each, at most 65,535.
	maxBatch = 40000
)

// changeDoc is a recorded write of a link: its revision and the classes it moves between.
type changeDoc struct {
	ID     string    `bson:"_id"`
	LinkID string    `bson:"link_id"`
	Rev    int64     `bson:"rev"`
	From   string    `bson:"from"`
	To     string    `bson:"to"`
	At     time.Time `bson:"at"`
	// Done is set once the write happened; Batch names the fold batch that took it; Load
	// names the bulk insert that recorded it.
	Done  bool   `bson:"done"`
	Batch string `bson:"batch,omitempty"`
	Load  string `bson:"load,omitempty"`
	// OwnerID is the link's owner ("" for none; absent from the changes of earlier versions)
	// and Entry an owned link as the write leaves it, for the owner's packs (see pack.go).
	OwnerID *string `bson:"owner_id,omitempty"`
	Entry   []byte  `bson:"entry,omitempty"`
}

// changeOf is the record of a write that leaves the link as after (at its revision), coming
// from class from.
func (s *Store) changeOf(after links.Link, from string) changeDoc {
	c := changeDoc{ID: after.ID + ":" + strconv.FormatInt(after.Rev, 10), LinkID: after.ID, Rev: after.Rev, From: from,
		To: after.Class(), At: s.now().UTC()}
	owner := after.OwnerID
	c.OwnerID = &owner
	if owner != "" {
		c.Entry = appendEntry(nil, after)
	}
	return c
}

// markDone says the write of change id happened. If it cannot, the folder finds out from
// the link's revision once changeLease has passed.
func (s *Store) markDone(ctx context.Context, id string) {
	ctx, cancel := afterwards(ctx)
	defer cancel()
	_, _ = s.changes.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "done", Value: true}}}})
}

// withdraw deletes the record of a write that did not happen; if that fails too, the folder
// drops it once its lease has passed.
func (s *Store) withdraw(ctx context.Context, id string) {
	ctx, cancel := afterwards(ctx)
	defer cancel()
	_, _ = s.changes.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
}

// revIs matches a link at revision rev (links stored before revisions read 0).
func revIs(rev int64) bson.E {
	if rev == 0 {
		return bson.E{Key: "rev", Value: bson.D{{Key: "$in", Value: bson.A{0, nil}}}}
	}
	return bson.E{Key: "rev", Value: rev}
}

// apply changes the link filter matches, if any, with change: it records the change under
// the link's next revision, then replaces the link conditionally on its revision. A write
// that loses its revision to a concurrent one reads the link again and retries, and says
// links.ErrConflict after changeRetries. It returns the changed link and whether there was
// one to change.
func (s *Store) apply(ctx context.Context, filter bson.D, change func(*links.Link)) (links.Link, bool, error) {
	for attempt := 1; ; attempt++ {
		var d doc
		err := s.links.FindOne(ctx, filter).Decode(&d)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return links.Link{}, false, nil
		}
		if err != nil {
			return links.Link{}, false, fmt.Errorf("read link: %w", err)
		}
		before := fromDoc(d)
		after := before
		change(&after)
		after.Rev = d.Rev + 1
		c := s.changeOf(after, before.Class())
		if _, err := s.changes.InsertOne(ctx, c); err != nil {
			if !mongo.IsDuplicateKeyError(err) {
				return links.Link{}, false, fmt.Errorf("record link change: %w", err)
			}
			// Another write holds the next revision.
			if attempt == changeRetries {
				return links.Link{}, false, links.ErrConflict
			}
			time.Sleep(time.Duration(attempt) * 5 * time.Millisecond)
			continue
		}
		res, err := s.links.ReplaceOne(ctx, bson.D{{Key: "_id", Value: d.ID}, revIs(d.Rev)}, toDoc(after))
		if err != nil {
			// The write may have happened (a deadline, a lost answer): the change stays
			// undone, and the folder settles it from the link's revision.
			return links.Link{}, false, fmt.Errorf("update link: %w", err)
		}
		if res.MatchedCount == 1 {
			s.markDone(ctx, c.ID)
			return after, true, nil
		}
		s.withdraw(ctx, c.ID)
		if attempt == changeRetries {
			return links.Link{}, false, links.ErrConflict
		}
	}
}

// countsDoc is the counters: the classes' sizes, the links scheduled to expire (per minute
// in the day documents), the expired ones, the last minute counted as passed, and the last
// batch added.
type countsDoc struct {
	ID        string `bson:"_id,omitempty"`
	Deleted   int64  `bson:"deleted"`
	Disabled  int64  `bson:"disabled"`
	Renewing  int64  `bson:"renewing"`
	Scheduled int64  `bson:"scheduled"`
	Expired   int64  `bson:"expired"`
	Through   int64  `bson:"through"`
	Batch     string `bson:"batch"`
}

// walDoc is a batch of changes before it is added: what it adds where, and which recorded
// changes it consumes.
type walDoc struct {
	ID   string                      `bson:"id"`
	All  map[string]int64            `bson:"all"`
	Days map[string]map[string]int64 `bson:"days"`
	// n is how many changes the batch holds, changes the changes themselves; a batch a
	// crash left has none read, and is read again for its entries.
	n       int
	changes []changeDoc
}

// CountStates reads the counters as the fold left them; 503-worthy links.ErrCountsNotReady
// before the first fold has counted the stored links.
func (s *Store) CountStates(ctx context.Context) (link.LinkCounts, error) {
	c, err := s.readCounts(ctx)
	if err != nil {
		return link.LinkCounts{}, err
	}
	out := link.LinkCounts{Active: c.Renewing + c.Scheduled, Expired: c.Expired, Disabled: c.Disabled, Deleted: c.Deleted}
	out.Total = out.Active + out.Expired + out.Disabled + out.Deleted
	return out, nil
}

// FoldCounts is one round of the counters' fold, run by one replica at a time: it finishes
// a batch a crash left, adds the recorded changes whose writes happened, drops those whose
// writes never will, and counts the minutes passed as expired. The first round counts the
// links already stored.
func (s *Store) FoldCounts(ctx context.Context, now time.Time) error {
	if err := s.ensurePacks(ctx); err != nil {
		return err
	}
	c, err := s.readCounts(ctx)
	if errors.Is(err, links.ErrCountsNotReady) {
		return s.backfill(ctx, now)
	}
	if err != nil {
		return err
	}
	var w walDoc
	err = s.counts.FindOne(ctx, bson.D{{Key: "_id", Value: countsWAL}}).Decode(&w)
	if err == nil {
		if err := s.addBatch(ctx, w); err != nil {
			return err
		}
	} else if !errors.Is(err, mongo.ErrNoDocuments) {
		return fmt.Errorf("read link counts batch: %w", err)
	}
	if w, err = s.nextBatch(ctx, c.Through, now); err != nil {
		return err
	}
	if w.n > 0 {
		if _, err := s.counts.InsertOne(ctx, bson.D{{Key: "_id", Value: countsWAL}, {Key: "id", Value: w.ID},
			{Key: "all", Value: w.All}, {Key: "days", Value: w.Days}}); err != nil {
			return fmt.Errorf("write link counts batch: %w", err)
		}
		if err := s.addBatch(ctx, w); err != nil {
			return err
		}
	}
	return s.pass(ctx, c.Through, ExpiredThrough(now))
}

// Unfolded counts the recorded changes the fold has not consumed yet.
func (s *Store) Unfolded(ctx context.Context) (int64, error) {
	n, err := s.changes.CountDocuments(ctx, bson.D{})
	if err != nil {
		return 0, fmt.Errorf("count link changes: %w", err)
	}
	return n, nil
}

// readCounts reads the counters; links.ErrCountsNotReady before the first fold.
func (s *Store) readCounts(ctx context.Context) (countsDoc, error) {
	var c countsDoc
	err := s.counts.FindOne(ctx, bson.D{{Key: "_id", Value: countsAll}}).Decode(&c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return c, links.ErrCountsNotReady
	}
	if err != nil {
		return c, fmt.Errorf("read link counts: %w", err)
	}
	return c, nil
}

// ExpiredThrough is the last minute that has fully passed at now.
func ExpiredThrough(now time.Time) int64 { return links.ExpiryMinute(now) - 1 }

// nextBatch settles the changes whose writer left no word within changeLease (from the
// link's revision: the write happened if the link reached it), then takes every change whose
// write happened into a new batch. Each step is a query over the changes, none a lookup per
// change: FerretDB answers a lookup by reading every document of its collection.
func (s *Store) nextBatch(ctx context.Context, through int64, now time.Time) (walDoc, error) {
	w := walDoc{ID: bson.NewObjectID().Hex(), All: map[string]int64{}, Days: map[string]map[string]int64{}}
	if err := s.settleStale(ctx, now); err != nil {
		return w, err
	}
	// Changes tagged by a batch that was never written are taken again. A batch takes the
	// oldest maxBatch done changes (and any recorded in the same millisecond as the last).
	take := bson.D{{Key: "done", Value: true}}
	var last struct {
		At time.Time `bson:"at"`
	}
	err := s.changes.FindOne(ctx, take, options.FindOne().SetSort(bson.D{{Key: "at", Value: 1}}).SetSkip(maxBatch-1).
		SetProjection(bson.D{{Key: "at", Value: 1}})).Decode(&last)
	switch {
	case err == nil:
		take = append(take, bson.E{Key: "at", Value: bson.D{{Key: "$lte", Value: last.At}}})
	case !errors.Is(err, mongo.ErrNoDocuments):
		return w, fmt.Errorf("read link changes: %w", err)
	}
	if _, err := s.changes.UpdateMany(ctx, take, bson.D{{Key: "$set", Value: bson.D{{Key: "batch", Value: w.ID}}}}); err != nil {
		return w, fmt.Errorf("take link changes: %w", err)
	}
	cur, err := s.changes.Find(ctx, bson.D{{Key: "batch", Value: w.ID}})
	if err != nil {
		return w, fmt.Errorf("read link changes: %w", err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		var c changeDoc
		if err := cur.Decode(&c); err != nil {
			return w, fmt.Errorf("read link change: %w", err)
		}
		w.add(c.From, -1, through)
		w.add(c.To, 1, through)
		w.n++
		w.changes = append(w.changes, c)
	}
	if err := cur.Err(); err != nil {
		return w, fmt.Errorf("read link changes: %w", err)
	}
	return w, nil
}

// settleStale decides the changes older than changeLease that were never marked done: a
// writer that died after its write, or whose mark failed, left the link at the change's
// revision or beyond (or deleted, for a purged link: only a purge deletes one, after every
// earlier write); otherwise the write never happened and the change is dropped.
func (s *Store) settleStale(ctx context.Context, now time.Time) error {
	cur, err := s.changes.Find(ctx, bson.D{{Key: "done", Value: false}, {Key: "at", Value: bson.D{{Key: "$lt", Value: now.Add(-changeLease)}}}})
	if err != nil {
		return fmt.Errorf("read stale link changes: %w", err)
	}
	var stale []changeDoc
	if err := cur.All(ctx, &stale); err != nil {
		return fmt.Errorf("read stale link changes: %w", err)
	}
	for _, c := range stale {
		var d struct {
			Rev int64 `bson:"rev"`
		}
		err := s.links.FindOne(ctx, bson.D{{Key: "_id", Value: c.LinkID}}, options.FindOne().SetProjection(bson.D{{Key: "rev", Value: 1}})).Decode(&d)
		gone := errors.Is(err, mongo.ErrNoDocuments)
		if err != nil && !gone {
			return fmt.Errorf("read link revision: %w", err)
		}
		if gone && c.From != links.ClassNone {
			// The link was purged since: an owner's packs get the write as a purge mark, so
			// that it never brings the link back.
			set := bson.D{{Key: "done", Value: true}}
			if e, ok := goneEntry(c); ok {
				set = append(set, bson.E{Key: "entry", Value: e})
			}
			if _, err := s.changes.UpdateOne(ctx, bson.D{{Key: "_id", Value: c.ID}}, bson.D{{Key: "$set", Value: set}}); err != nil {
				return fmt.Errorf("settle link change: %w", err)
			}
			continue
		}
		if !gone && d.Rev >= c.Rev {
			s.markDone(ctx, c.ID)
			continue
		}
		if _, err := s.changes.DeleteOne(ctx, bson.D{{Key: "_id", Value: c.ID}}); err != nil {
			return fmt.Errorf("drop link change: %w", err)
		}
	}
	return nil
}

// add counts one link more (sign 1) or less (-1) in class.
func (w *walDoc) add(class string, sign int64, through int64) {
	if class == links.ClassNone {
		return
	}
	m, expiring := links.ExpiringAt(class)
	switch {
	case !expiring:
		w.All[class] += sign
	case m <= through:
		w.All["expired"] += sign
	default:
		w.All["scheduled"] += sign
		day := dayID(m / (24 * 60))
		if w.Days[day] == nil {
			w.Days[day] = map[string]int64{}
		}
		w.Days[day][strconv.FormatInt(m%(24*60), 10)] += sign
	}
}

func dayID(day int64) string { return "day:" + strconv.FormatInt(day, 10) }

// addBatch writes w's entries into their owners' packs and adds w where it says, each
// document once (it records the batch it last took), then deletes w's changes and w itself.
// A crash half way is finished by the next round.
func (s *Store) addBatch(ctx context.Context, w walDoc) error {
	if err := s.packBatch(ctx, w.ID, w.changes); err != nil {
		return err
	}
	for day, minutes := range w.Days {
		inc := bson.D{}
		for m, n := range minutes {
			inc = append(inc, bson.E{Key: "m." + m, Value: n})
		}
		if err := s.addOnce(ctx, day, w.ID, inc); err != nil {
			return err
		}
	}
	inc := bson.D{}
	for k, n := range w.All {
		inc = append(inc, bson.E{Key: k, Value: n})
	}
	if err := s.addOnce(ctx, countsAll, w.ID, inc); err != nil {
		return err
	}
	if _, err := s.changes.DeleteMany(ctx, bson.D{{Key: "batch", Value: w.ID}}); err != nil {
		return fmt.Errorf("consume link changes: %w", err)
	}
	if _, err := s.counts.DeleteOne(ctx, bson.D{{Key: "_id", Value: countsWAL}}); err != nil {
		return fmt.Errorf("delete link counts batch: %w", err)
	}
	return nil
}

// addOnce adds inc to counts document id unless batch was added to it already.
func (s *Store) addOnce(ctx context.Context, id, batch string, inc bson.D) error {
	update := bson.D{{Key: "$set", Value: bson.D{{Key: "batch", Value: batch}}}}
	if len(inc) > 0 {
		update = append(update, bson.E{Key: "$inc", Value: inc})
	}
	_, err := s.counts.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "batch", Value: bson.D{{Key: "$ne", Value: batch}}}},
		update, options.UpdateOne().SetUpsert(true))
	if err != nil && !mongo.IsDuplicateKeyError(err) { // a duplicate: it holds the batch already
		return fmt.Errorf("add to link counts: %w", err)
	}
	return nil
}

// pass moves the links scheduled to expire in the minutes after from up to to from
// scheduled to expired, in one conditional write of the counters.
func (s *Store) pass(ctx context.Context, from, to int64) error {
	if to <= from {
		return nil
	}
	var n int64
	const day = 24 * 60
	for d := (from + 1) / day; d <= to/day; d++ {
		var doc struct {
			M map[string]int64 `bson:"m"`
		}
		err := s.counts.FindOne(ctx, bson.D{{Key: "_id", Value: dayID(d)}}).Decode(&doc)
		if errors.Is(err, mongo.ErrNoDocuments) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read expiries: %w", err)
		}
		for k, v := range doc.M {
			minute, err := strconv.ParseInt(k, 10, 64)
			if err != nil {
				continue
			}
			if m := d*day + minute; m > from && m <= to {
				n += v
			}
		}
	}
	_, err := s.counts.UpdateOne(ctx, bson.D{{Key: "_id", Value: countsAll}, {Key: "through", Value: from}}, bson.D{
		{Key: "$inc", Value: bson.D{{Key: "expired", Value: n}, {Key: "scheduled", Value: -n}}},
		{Key: "$set", Value: bson.D{{Key: "through", Value: to}}},
	})
	if err != nil {
		return fmt.Errorf("count expired links: %w", err)
	}
	return nil
}

// backfill counts the links stored before the counters existed, once: it reads every link,
// consumes the recorded changes the read already reflects (a revision at most the one read),
// writes the expiries and, last, the counters. A crash before the last write starts it over.
func (s *Store) backfill(ctx context.Context, now time.Time) error {
	through := ExpiredThrough(now)
	w := walDoc{All: map[string]int64{}, Days: map[string]map[string]int64{}}
	// Expiries a crashed backfill wrote are written again from scratch.
	if _, err := s.counts.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$regex", Value: "^day:"}}}}); err != nil {
		return fmt.Errorf("clear expiries: %w", err)
	}
	cur, err := s.links.Find(ctx, bson.D{})
	if err != nil {
		return fmt.Errorf("count stored links: %w", err)
	}
	defer cur.Close(ctx)
	revs := map[string]int64{}
	for cur.Next(ctx) {
		var d doc
		if err := cur.Decode(&d); err != nil {
			return fmt.Errorf("count stored links: %w", err)
		}
		w.add(fromDoc(d).Class(), 1, through)
		revs[d.ID] = d.Rev
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("count stored links: %w", err)
	}
	seen, err := s.changes.Find(ctx, bson.D{})
	if err != nil {
		return fmt.Errorf("read link changes: %w", err)
	}
	var changes []changeDoc
	if err := seen.All(ctx, &changes); err != nil {
		return fmt.Errorf("read link changes: %w", err)
	}
	var reflected []changeDoc
	for _, c := range changes {
		if rev, ok := revs[c.LinkID]; ok && c.Rev <= rev {
			reflected = append(reflected, c)
		}
	}
	// The packs were made before this read: what it reflects reaches them first.
	if foreign, err := s.packChanges(ctx, reflected); err != nil {
		return err
	} else if foreign {
		if err := s.dropMarker(ctx); err != nil {
			return err
		}
	}
	for _, c := range reflected {
		if _, err := s.changes.DeleteOne(ctx, bson.D{{Key: "_id", Value: c.ID}}); err != nil {
			return fmt.Errorf("consume link change: %w", err)
		}
	}
	for day, minutes := range w.Days {
		set := bson.D{}
		for m, n := range minutes {
			set = append(set, bson.E{Key: "m." + m, Value: n})
		}
		if _, err := s.counts.UpdateOne(ctx, bson.D{{Key: "_id", Value: day}}, bson.D{{Key: "$set", Value: set}},
			options.UpdateOne().SetUpsert(true)); err != nil {
			return fmt.Errorf("write expiries: %w", err)
		}
	}
	_, err = s.counts.InsertOne(ctx, countsDoc{ID: countsAll, Deleted: w.All[links.ClassDeleted], Disabled: w.All[links.ClassDisabled],
		Renewing: w.All[links.ClassRenewing], Scheduled: w.All["scheduled"], Expired: w.All["expired"], Through: through})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("write link counts: %w", err)
	}
	return nil
}
