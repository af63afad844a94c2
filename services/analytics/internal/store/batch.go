package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
)

// A batch is counted exactly once without transactions, in steps that each heal on retry:
//
//  1. Insert stores the batch's clicks pending in a new batch id; a click stored before
//     (a redelivery, or an event the producer wrote twice) keeps its own state.
//  2. PendingBatches names the batches still pending among those stored before.
//  3. Apply reads a batch's pending clicks and adds them to the rollups in one bulkWrite,
//     each rollup guarded by the batch id, so applying a batch again adds nothing.
//  4. Finish marks the batch's clicks applied (no longer pending).
//
// Only then are the stream entries acknowledged, so a crash between any two steps leaves
// them to be delivered again, and the clicks pending to be found again. A batch may be
// applied by any consumer once its Insert is over: a batch read while its clicks are still
// being inserted would be applied short. Its own consumer knows when that is; any other
// waits until the batch is older than the longest an Insert may take (see SealAge).

// Insert stores clicks pending in batch, now, and returns the ids of those stored before.
func (s *Store) Insert(ctx context.Context, clicks []analytics.Click, batch bson.ObjectID, now time.Time) ([]string, error) {
	docs := make([]any, len(clicks))
	stored := now.UTC()
	for i, c := range clicks {
		docs[i] = clickDoc{ID: c.EventID, LinkID: c.LinkID, OwnerID: c.OwnerID, ClickedAt: c.ClickedAt.UTC(), Day: Day(c.ClickedAt),
			Country: c.Country, Referrer: c.Referrer, DeviceType: c.DeviceType, Browser: c.Browser, OS: c.OS,
			Visitor: VisitorID(c), ExpiresAt: expiry(c.ClickedAt, stored, s.retention), Pending: &stored, Batch: batch}
	}
	dups, err := insertNew(ctx, s.clicks, docs)
	if err != nil {
		return nil, fmt.Errorf("store clicks: %w", err)
	}
	ids := make([]string, len(dups))
	for i, d := range dups {
		ids[i] = clicks[d].EventID
	}
	return ids, nil
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

var isPending = bson.E{Key: "pending", Value: bson.D{{Key: "$exists", Value: true}}}

// PendingBatches are the batches holding clicks among ids that are not applied yet.
func (s *Store) PendingBatches(ctx context.Context, ids []string) ([]bson.ObjectID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return s.batches(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}, isPending})
}

// StaleBatches are the pending batches begun before cutoff: those whose consumer failed or
// died, and whose stream entries may be gone (dead-lettered).
func (s *Store) StaleBatches(ctx context.Context, cutoff time.Time) ([]bson.ObjectID, error) {
	return s.batches(ctx, bson.D{{Key: "batch", Value: bson.D{{Key: "$lt", Value: bson.NewObjectIDFromTimestamp(cutoff)}}}, isPending})
}

func (s *Store) batches(ctx context.Context, filter bson.D) ([]bson.ObjectID, error) {
	var out []bson.ObjectID
	if err := s.clicks.Distinct(ctx, "batch", filter).Decode(&out); err != nil {
		return nil, fmt.Errorf("find pending batches: %w", err)
	}
	return out, nil
}

// Apply adds batch's pending clicks to the rollups, those of purged links left out. Their
// new visitors are decided first: a visitor's document names the click that met it first,
// inserted once, so the decision is the same every time the batch is applied.
func (s *Store) Apply(ctx context.Context, batch bson.ObjectID) error {
	cur, err := s.clicks.Find(ctx, bson.D{{Key: "batch", Value: batch}, isPending})
	if err != nil {
		return fmt.Errorf("read batch: %w", err)
	}
	var clicks []clickDoc
	if err := cur.All(ctx, &clicks); err != nil {
		return fmt.Errorf("read batch: %w", err)
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

// Finish marks batch applied: its clicks are no longer pending.
func (s *Store) Finish(ctx context.Context, batch bson.ObjectID) error {
	_, err := s.clicks.UpdateMany(ctx, bson.D{{Key: "batch", Value: batch}, isPending},
		bson.D{{Key: "$unset", Value: bson.D{{Key: "pending", Value: ""}, {Key: "batch", Value: ""}}}})
	if err != nil {
		return fmt.Errorf("finish batch: %w", err)
	}
	return nil
}

// AppliedUntil is when the oldest click still pending was stored: every click stored
// before it is in the rollups. now when none is pending.
func (s *Store) AppliedUntil(ctx context.Context, now time.Time) (time.Time, error) {
	var oldest clickDoc
	err := s.clicks.FindOne(ctx, bson.D{isPending}, options.FindOne().SetSort(bson.D{{Key: "pending", Value: 1}}).
		SetProjection(bson.D{{Key: "pending", Value: 1}})).Decode(&oldest)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return now, nil
	}
	if err != nil || oldest.Pending == nil {
		return time.Time{}, fmt.Errorf("read oldest pending click: %w", err)
	}
	return *oldest.Pending, nil
}
