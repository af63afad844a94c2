package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
)

// A batch is counted exactly once without transactions, in steps that each heal on retry:
//
//  1. Insert records a new batch, open, then stores the batch's clicks in it; a click
//     stored before (a redelivery, or an event the producer wrote twice) stays in its own.
//  2. PendingBatches names the batches still open among those of the clicks stored before.
//  3. Apply reads a batch's clicks and adds them to the rollups in one bulkWrite, each
//     rollup guarded by the batch id, so applying a batch again adds nothing.
//  4. Finish closes the batch.
//
// Only then are the stream entries acknowledged, so a crash between any two steps leaves
// them to be delivered again, and the batch open to be found again. A batch may be
// applied by any consumer once its Insert is over: a batch read while its clicks are still
// being inserted would be applied short. Its own consumer knows when that is; any other
// waits until the batch is older than the longest an Insert may take (see SealAge).

// Insert records batch, open, and stores clicks in it, now; it returns the ids of the clicks
// stored before. The record goes first: no click is ever in a batch nobody can find.
func (s *Store) Insert(ctx context.Context, clicks []analytics.Click, batch bson.ObjectID, now time.Time) ([]string, error) {
	stored := now.UTC()
	if _, err := s.batches.InsertOne(ctx, batchDoc{ID: batch, Stored: stored, Open: true, ExpiresAt: stored.Add(batchKeep)}); err != nil && !mongo.IsDuplicateKeyError(err) {
		return nil, fmt.Errorf("record batch: %w", err)
	}
	docs := make([]any, len(clicks))
	for i, c := range clicks {
		docs[i] = clickDoc{ID: c.EventID, LinkID: c.LinkID, OwnerID: c.OwnerID, ClickedAt: c.ClickedAt.UTC(), Day: Day(c.ClickedAt),
			Country: c.Country, Referrer: c.Referrer, DeviceType: c.DeviceType, Browser: c.Browser, OS: c.OS,
			Visitor: VisitorID(c), ExpiresAt: expiry(c.ClickedAt, stored, s.retention), Batch: batch}
	}
	dups, err := insertNew(ctx, s.clicks, docs)
	if err != nil {
		return nil, fmt.Errorf("store clicks: %w", err)
	}
	ids := make([]string, len(dups))
	dup := make(map[int]bool, len(dups))
	for i, d := range dups {
		ids[i] = clicks[d].EventID
		dup[d] = true
	}
	in := make([]clickDoc, 0, len(docs)-len(dups))
	for i, d := range docs {
		if !dup[i] {
			in = append(in, d.(clickDoc))
		}
	}
	s.inserted.put(batch, in)
	return ids, nil
}

// insertedBatches keeps the clicks of the last few batches this store inserted whole, until
// they are finished: exactly the clicks the store holds in each, so applying one reads them
// from memory rather than the store.
type insertedBatches struct {
	mu sync.Mutex
	m  map[bson.ObjectID][]clickDoc
}

// keptBatches bounds insertedBatches: a consumer finishes its batches one at a time.
const keptBatches = 4

func (b *insertedBatches) put(batch bson.ObjectID, clicks []clickDoc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil || len(b.m) >= keptBatches {
		b.m = map[bson.ObjectID][]clickDoc{}
	}
	b.m[batch] = clicks
}

func (b *insertedBatches) get(batch bson.ObjectID) ([]clickDoc, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.m[batch]
	return c, ok
}

func (b *insertedBatches) drop(batch bson.ObjectID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, batch)
}

// expiry is when a click made at clicked and stored at stored is deleted: retention after it
// was made, but never before retention after it was stored — a click stored long after it
// was made (a replay) must outlive its chance of being delivered again, or it would be
// counted twice.
func expiry(clicked, stored time.Time, retention time.Duration) time.Time {
	if clicked.After(stored) {
		stored = clicked
	}
	return stored.Add(retention).UTC()
}

// isOpen matches the batches not yet in the rollups.
var isOpen = bson.D{{Key: "open", Value: bson.D{{Key: "$exists", Value: true}}}}

// PendingBatches are the open batches of the clicks among ids.
func (s *Store) PendingBatches(ctx context.Context, ids []string) ([]bson.ObjectID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var of []bson.ObjectID
	if err := s.clicks.Distinct(ctx, "batch", bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}).Decode(&of); err != nil {
		return nil, fmt.Errorf("find the batches of clicks: %w", err)
	}
	if len(of) == 0 {
		return nil, nil
	}
	return s.openBatches(ctx, append(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: of}}}}, isOpen...))
}

// StaleBatches are the open batches stored before cutoff: those whose consumer failed or
// died, and whose stream entries may be gone (dead-lettered).
func (s *Store) StaleBatches(ctx context.Context, cutoff time.Time) ([]bson.ObjectID, error) {
	return s.openBatches(ctx, append(bson.D{{Key: "stored", Value: bson.D{{Key: "$lt", Value: cutoff.UTC()}}}}, isOpen...))
}

func (s *Store) openBatches(ctx context.Context, filter bson.D) ([]bson.ObjectID, error) {
	cur, err := s.batches.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("find open batches: %w", err)
	}
	var docs []batchDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("find open batches: %w", err)
	}
	out := make([]bson.ObjectID, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out, nil
}

// Apply adds batch's clicks to the rollups, those of purged links left out. Their
// new visitors are decided first: a visitor's document names the click that met it first,
// inserted once, so the decision is the same every time the batch is applied.
func (s *Store) Apply(ctx context.Context, batch bson.ObjectID) error {
	clicks, ok := s.inserted.get(batch)
	if !ok {
		cur, err := s.clicks.Find(ctx, bson.D{{Key: "batch", Value: batch}})
		if err != nil {
			return fmt.Errorf("read batch: %w", err)
		}
		if err := cur.All(ctx, &clicks); err != nil {
			return fmt.Errorf("read batch: %w", err)
		}
	}
	links := map[string]bool{}
	for _, c := range clicks {
		links[c.LinkID] = true
	}
	gone, err := s.Purged(ctx, links)
	if err != nil {
		return err
	}
	firsts, err := s.firstClicks(ctx, clicks, gone)
	if err != nil {
		return err
	}
	t := tally{}
	counted := map[string]bool{}
	for i := range clicks {
		c := &clicks[i]
		if gone[c.LinkID] {
			continue
		}
		isNew := c.Visitor != "" && firsts[c.Visitor] && !counted[c.Visitor]
		if isNew {
			counted[c.Visitor] = true
		}
		t.addClick(c, isNew)
	}
	return s.write(ctx, t.models(&batch))
}

// firstClicks inserts the visitors of clicks (but those of links in gone) and tells, by
// visitor id, whether a click among clicks met it first.
func (s *Store) firstClicks(ctx context.Context, clicks []clickDoc, gone map[string]bool) (map[string]bool, error) {
	mine := map[string]bool{} // click ids
	var docs []any
	var ids []string
	seen := map[string]bool{}
	for _, c := range clicks {
		mine[c.ID] = true
		if c.Visitor == "" || gone[c.LinkID] || seen[c.Visitor] {
			continue
		}
		seen[c.Visitor] = true
		docs = append(docs, visitorDoc{ID: c.Visitor, Click: c.ID, ExpiresAt: c.ExpiresAt})
		ids = append(ids, c.Visitor)
	}
	dups, err := insertNew(ctx, s.visitors, docs)
	if err != nil {
		return nil, fmt.Errorf("store visitors: %w", err)
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	if len(dups) == 0 {
		return out, nil
	}
	// Those stored before name their first click, which may be one of these (the batch
	// applied again) or another one.
	known := make([]string, len(dups))
	for i, d := range dups {
		known[i] = ids[d]
	}
	cur, err := s.visitors.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: known}}}})
	if err != nil {
		return nil, fmt.Errorf("read visitors: %w", err)
	}
	var stored []visitorDoc
	if err := cur.All(ctx, &stored); err != nil {
		return nil, fmt.Errorf("read visitors: %w", err)
	}
	for _, v := range stored {
		out[v.ID] = mine[v.Click]
	}
	return out, nil
}

// Finish closes batch: it is in the rollups.
func (s *Store) Finish(ctx context.Context, batch bson.ObjectID) error {
	if _, err := s.batches.UpdateOne(ctx, bson.D{{Key: "_id", Value: batch}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "open", Value: ""}}}}); err != nil {
		return fmt.Errorf("finish batch: %w", err)
	}
	s.inserted.drop(batch)
	return nil
}

// AppliedUntil is when the oldest batch still open was stored: every click stored before it
// is in the rollups. now when none is open.
func (s *Store) AppliedUntil(ctx context.Context, now time.Time) (time.Time, error) {
	var oldest batchDoc
	err := s.batches.FindOne(ctx, isOpen, options.FindOne().SetSort(bson.D{{Key: "stored", Value: 1}})).Decode(&oldest)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return now, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read oldest open batch: %w", err)
	}
	return oldest.Stored, nil
}
