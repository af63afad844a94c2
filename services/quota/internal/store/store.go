// Package store is the quota service's MongoDB access: the quota_usage collection of
// per-minute buckets that make counters survive a Redis restart. No other package touches
// MongoDB.
package store

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/services/quota/internal/window"
)

// Collection is the collection the store owns.
const Collection = "quota_usage"

// WindowStartLayout formats a bucket's minute as stored in window_start, e.g.
// "2026-11-21T13:05Z". Fixed width, so text order is time order.
const WindowStartLayout = "2006-01-02T15:04Z"

// addAttempts bounds the tries of one increment: an insert that meets the bucket, then an
// $inc that misses it only if the bucket expired and was deleted in between, or a write the
// store aborted to break a deadlock (see isDeadlock).
const addAttempts = 10

// usageDoc is one bucket document.
type usageDoc struct {
	IdentityKey string    `bson:"identity_key"`
	Scope       string    `bson:"scope"`
	IsAnonymous int       `bson:"is_anonymous"`
	WindowStart string    `bson:"window_start"`
	Count       int       `bson:"count"`
	ExpiresAt   time.Time `bson:"expires_at"`
}

// Store reads and writes quota_usage.
type Store struct {
	coll *mongo.Collection
	// turns lets one increment of a bucket at a time reach the store (see Add).
	turns mongodb.Turns
}

// New returns a Store on db.
func New(db *mongo.Database) *Store { return &Store{coll: db.Collection(Collection)} }

// Prepare creates the indexes: the unique bucket index, and the TTL index that deletes a
// bucket once its expires_at has passed (replacing any other index of expires_at). The
// migration runs it (`quota migrate`); under a serving replica's checked schema it does nothing.
func Prepare(ctx context.Context, db *mongo.Database) error {
	return mongodb.EnsureIndexes(ctx, db,
		mongodb.Index{Collection: Collection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "scope", Value: 1}, {Key: "identity_key", Value: 1}, {Key: "window_start", Value: 1}},
			Options: options.Index().SetUnique(true).SetName("scope_identity_window_unique"),
		}},
		mongodb.Index{Collection: Collection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "expires_at", Value: 1}},
			Options: options.Index().SetExpireAfterSeconds(0).SetName("expires_at_ttl"),
		}},
	)
}

func bucketFilter(scope, key string, start time.Time) bson.D {
	return bson.D{
		{Key: "scope", Value: scope},
		{Key: "identity_key", Value: key},
		{Key: "window_start", Value: start.UTC().Format(WindowStartLayout)},
	}
}

// Add changes a bucket's count by delta; see window.Ledger. Each change is one atomic write
// on the server, so concurrent changes of one bucket from any number of replicas all count.
// An increment creates the bucket or adds to it; its expires_at only ever moves later, so a
// lengthened window keeps the bucket as long as the new window needs it. A decrement never
// takes a count below zero and never creates a bucket.
func (s *Store) Add(ctx context.Context, b window.Bucket, delta int) error {
	filter := bucketFilter(b.Scope, b.Key, b.Start)
	inc := bson.E{Key: "$inc", Value: bson.D{{Key: "count", Value: delta}}}
	if delta < 0 {
		filter = append(filter, bson.E{Key: "count", Value: bson.D{{Key: "$gte", Value: -delta}}})
		if _, err := s.coll.UpdateOne(ctx, filter, bson.D{inc}); err != nil {
			return fmt.Errorf("decrement quota bucket: %w", err)
		}
		return nil
	}
	anonymous := 0
	if b.Anonymous {
		anonymous = 1
	}
	// Most buckets are new (a caller rarely takes two units in one minute), so the bucket is
	// inserted whole, and only when the unique index says it exists is it incremented. Every
	// step is atomic, so concurrent units all count. An upsert only where inserts deadlock:
	// on the embedded store (DocumentDB 0.108) an insert costs a tenth of an upsert, and many
	// concurrent upserts of distinct new documents crashed its server process (a
	// segmentation fault); concurrent inserts of one new bucket can deadlock instead (see
	// isDeadlock), and an upsert settles those; three or more can livelock, so increments of
	// one bucket take turns within a replica (see mongodb.Turns; TestConcurrentAddsOfOneNewBucket
	// missed its deadline without them). MongoDB needs none of this, and loses nothing by it.
	done, err := s.turns.Take(ctx, b.Scope+"\x00"+b.Key+"\x00"+b.Start.UTC().Format(WindowStartLayout))
	if err != nil {
		return fmt.Errorf("add to quota bucket: %w", err)
	}
	defer done()
	for attempt := 1; ; attempt++ {
		_, err := s.coll.InsertOne(ctx, usageDoc{IdentityKey: b.Key, Scope: b.Scope, IsAnonymous: anonymous,
			WindowStart: b.Start.UTC().Format(WindowStartLayout), Count: delta, ExpiresAt: b.ExpiresAt.UTC()})
		if err == nil {
			return nil
		}
		if mongo.IsDuplicateKeyError(err) {
			res, uerr := s.coll.UpdateOne(ctx, filter, bson.D{inc, {Key: "$max", Value: bson.D{{Key: "expires_at", Value: b.ExpiresAt.UTC()}}}})
			if uerr == nil && res.MatchedCount == 1 {
				return nil
			}
			err = uerr // nil: the bucket expired and was deleted in between; insert it again
		}
		if err != nil && isDeadlock(err) {
			// Concurrent writers of one new bucket: an upsert, which the store decides
			// among them without deadlocking.
			_, err = s.coll.UpdateOne(ctx, filter, bson.D{inc, {Key: "$max", Value: bson.D{{Key: "expires_at", Value: b.ExpiresAt.UTC()}}},
				{Key: "$setOnInsert", Value: bson.D{{Key: "is_anonymous", Value: anonymous}}}}, options.UpdateOne().SetUpsert(true))
			if err == nil {
				return nil
			}
		}
		if err != nil && !isDeadlock(err) && !mongo.IsDuplicateKeyError(err) {
			return fmt.Errorf("add to quota bucket: %w", err)
		}
		if attempt == addAttempts {
			return fmt.Errorf("add to quota bucket: not done after %d attempts (last: %v)", addAttempts, err)
		}
		if isDeadlock(err) {
			// Writers that deadlocked together must not meet again at once: under load the
			// upserts deadlock too.
			time.Sleep(time.Duration(5+mrand.IntN(45)) * time.Millisecond)
		}
	}
}

// isDeadlock is mongodb.IsDeadlock: TestConcurrentAddsOfOneNewBucket fails on it without
// the upsert that follows.
func isDeadlock(err error) bool { return mongodb.IsDeadlock(err) }

// Buckets returns the counting buckets of (scope, key) from the minute from on; see
// window.Ledger.
func (s *Store) Buckets(ctx context.Context, scope, key string, from time.Time) ([]window.Bucket, error) {
	filter := bson.D{
		{Key: "scope", Value: scope},
		{Key: "identity_key", Value: key},
		{Key: "window_start", Value: bson.D{{Key: "$gte", Value: from.UTC().Format(WindowStartLayout)}}},
		{Key: "count", Value: bson.D{{Key: "$gt", Value: 0}}},
	}
	cur, err := s.coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "window_start", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("find quota buckets: %w", err)
	}
	var docs []usageDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read quota buckets: %w", err)
	}
	out := make([]window.Bucket, 0, len(docs))
	for _, d := range docs {
		start, err := time.Parse(WindowStartLayout, d.WindowStart)
		if err != nil {
			return nil, fmt.Errorf("parse window_start %q: %w", d.WindowStart, err)
		}
		out = append(out, window.Bucket{Scope: d.Scope, Key: d.IdentityKey, Anonymous: d.IsAnonymous == 1,
			Start: start, Count: d.Count, ExpiresAt: d.ExpiresAt})
	}
	return out, nil
}
