// Package store is the quota service's MongoDB access: the quota_usage collection of
// per-minute buckets that make counters survive a Redis restart. No other package touches
// MongoDB.
package store

import (
	"context"
	"fmt"
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

// upsertAttempts bounds retries of an upsert that lost a creation race to the unique index.
const upsertAttempts = 3

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
}

// New returns a Store on db.
func New(db *mongo.Database) *Store { return &Store{coll: db.Collection(Collection)} }

// EnsureIndexes creates the unique bucket index and the sweeper's index; every replica runs
// it at start-up.
func EnsureIndexes(ctx context.Context, db *mongo.Database) error {
	return mongodb.EnsureIndexes(ctx, db,
		mongodb.Index{Collection: Collection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "scope", Value: 1}, {Key: "identity_key", Value: 1}, {Key: "window_start", Value: 1}},
			Options: options.Index().SetUnique(true).SetName("scope_identity_window_unique"),
		}},
		mongodb.Index{Collection: Collection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "expires_at", Value: 1}},
			Options: options.Index().SetName("expires_at"),
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

// Add changes a bucket's count by delta; see window.Ledger. A new bucket is inserted
// whole: on FerretDB an upsert costs a filtered read first (five times an insert's cost:
// 712 against 3,707 writes/s measured in benchcreate), and most buckets are new, since a
// caller rarely takes two units in one minute. Only a bucket that already exists is
// incremented.
func (s *Store) Add(ctx context.Context, b window.Bucket, delta int) error {
	filter := bucketFilter(b.Scope, b.Key, b.Start)
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "count", Value: delta}}}}
	if delta < 0 {
		if _, err := s.coll.UpdateOne(ctx, filter, inc); err != nil {
			return fmt.Errorf("decrement quota bucket: %w", err)
		}
		return nil
	}
	anonymous := 0
	if b.Anonymous {
		anonymous = 1
	}
	for range upsertAttempts {
		_, err := s.coll.InsertOne(ctx, usageDoc{IdentityKey: b.Key, Scope: b.Scope, IsAnonymous: anonymous,
			WindowStart: b.Start.UTC().Format(WindowStartLayout), Count: delta, ExpiresAt: b.ExpiresAt.UTC()})
		if err == nil {
			return nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return fmt.Errorf("insert quota bucket: %w", err)
		}
		res, err := s.coll.UpdateOne(ctx, filter, bson.D{inc[0], {Key: "$set", Value: bson.D{{Key: "expires_at", Value: b.ExpiresAt.UTC()}}}})
		if err != nil {
			return fmt.Errorf("increment quota bucket: %w", err)
		}
		if res.MatchedCount == 1 {
			return nil
		}
		// The bucket vanished between the two steps (the sweeper); insert it again.
	}
	return fmt.Errorf("increment quota bucket: it kept vanishing after %d attempts", upsertAttempts)
}

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

// DeleteExpired removes the buckets whose units have all left their window by now.
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	res, err := s.coll.DeleteMany(ctx, bson.D{{Key: "expires_at", Value: bson.D{{Key: "$lt", Value: now.UTC()}}}})
	if err != nil {
		return 0, fmt.Errorf("delete expired quota buckets: %w", err)
	}
	return res.DeletedCount, nil
}

// SweepInterval is how often expired documents are deleted (see mongodb.Sweeper). Expired
// ones are already ignored by every read, so the interval only bounds the space they take.
const SweepInterval = 10 * time.Minute
