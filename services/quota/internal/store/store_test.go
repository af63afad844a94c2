package store

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/quota/internal/window"
)

func newStore(t *testing.T) (*Store, *mongo.Database) {
	t.Helper()
	db := testenv.Mongo(t)
	if err := EnsureIndexes(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	// Running it twice, as a second replica does, must be harmless.
	if err := EnsureIndexes(context.Background(), db); err != nil {
		t.Fatalf("second EnsureIndexes: %v", err)
	}
	return New(db), db
}

var minute = time.Date(2026, 11, 21, 13, 5, 0, 0, time.UTC)

func bucket(key string, start time.Time) window.Bucket {
	return window.Bucket{Scope: "anonymous_create", Key: key, Anonymous: true, Start: start,
		ExpiresAt: start.Add(time.Minute + 24*time.Hour)}
}

func TestAddWritesTheDocumentShape(t *testing.T) {
	s, db := newStore(t)
	ctx := context.Background()
	for range 2 {
		if err := s.Add(ctx, bucket("k1", minute), 1); err != nil {
			t.Fatal(err)
		}
	}
	var doc bson.M
	if err := db.Collection(Collection).FindOne(ctx, bson.D{{Key: "identity_key", Value: "k1"}}).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc["window_start"] != "2026-11-21T13:05Z" || doc["scope"] != "anonymous_create" {
		t.Fatalf("document %v", doc)
	}
	if n, _ := doc["count"].(int32); n != 2 {
		if n64, _ := doc["count"].(int64); n64 != 2 {
			t.Fatalf("count = %v (%T), want 2", doc["count"], doc["count"])
		}
	}
	if a, _ := doc["is_anonymous"].(int32); a != 1 {
		if a64, _ := doc["is_anonymous"].(int64); a64 != 1 {
			t.Fatalf("is_anonymous = %v, want 1", doc["is_anonymous"])
		}
	}
	exp, ok := doc["expires_at"].(bson.DateTime)
	if !ok || !exp.Time().Equal(minute.Add(24*time.Hour+time.Minute)) {
		t.Fatalf("expires_at = %v (%T), want bucket end + window as a datetime", doc["expires_at"], doc["expires_at"])
	}
}

func TestBucketsAndDecrements(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	adds := []struct {
		key   string
		start time.Time
		delta int
	}{
		{"k1", minute.Add(-2 * time.Minute), 1},
		{"k1", minute, 1},
		{"k1", minute, 1},
		{"k1", minute.Add(time.Minute), 1},
		{"k1", minute.Add(time.Minute), -1}, // released: count 0, not returned
		{"k2", minute, 1},                   // other key
		{"k1", minute.Add(5 * time.Minute), -1},
	}
	for _, a := range adds {
		if err := s.Add(ctx, bucket(a.key, a.start), a.delta); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Buckets(ctx, "anonymous_create", "k1", minute.Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Start.Equal(minute) || got[0].Count != 2 || got[0].Key != "k1" || !got[0].Anonymous {
		t.Fatalf("Buckets = %+v, want only 13:05 with count 2", got)
	}
	all, err := s.Buckets(ctx, "anonymous_create", "k1", time.Time{})
	if err != nil || len(all) != 2 || !all[0].Start.Before(all[1].Start) {
		t.Fatalf("all buckets = %+v, %v; want 2, oldest first", all, err)
	}
	// A decrement of a bucket that does not exist must not create one with count -1.
	n, err := s.coll.CountDocuments(ctx, bson.D{{Key: "window_start", Value: "2026-11-21T13:10Z"}})
	if err != nil || n != 0 {
		t.Fatalf("decrement created %d documents (%v)", n, err)
	}
}

func TestUniqueBucketIndex(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	doc := bson.D{{Key: "scope", Value: "anonymous_create"}, {Key: "identity_key", Value: "k"},
		{Key: "window_start", Value: "2026-11-21T13:05Z"}, {Key: "count", Value: 1}}
	if _, err := s.coll.InsertOne(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if _, err := s.coll.InsertOne(ctx, doc); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("second insert of the same bucket = %v, want duplicate key", err)
	}
}

func TestDeleteExpiredDeletesOnlyExpired(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for i, key := range []string{"old", "edge", "fresh"} {
		b := bucket(key, minute)
		b.ExpiresAt = minute.Add(time.Duration(i-1) * time.Second) // -1s, 0, +1s
		if err := s.Add(ctx, b, 1); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.DeleteExpired(ctx, minute)
	if err != nil || n != 1 {
		t.Fatalf("DeleteExpired = %d, %v; want 1", n, err)
	}
	for key, want := range map[string]int{"old": 0, "edge": 1, "fresh": 1} {
		got, err := s.Buckets(ctx, "anonymous_create", key, time.Time{})
		if err != nil || len(got) != want {
			t.Errorf("%s: %d buckets (%v), want %d", key, len(got), err, want)
		}
	}
}
