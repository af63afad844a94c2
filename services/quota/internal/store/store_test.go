package store

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/quota/internal/window"
)

func newStore(t testing.TB) (*Store, *mongo.Database) {
	t.Helper()
	db := testenv.Mongo(t)
	if err := Prepare(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	// Running it twice, as a second replica does, must be harmless.
	if err := Prepare(context.Background(), db); err != nil {
		t.Fatalf("second Prepare: %v", err)
	}
	return New(db), db
}

// minute is the tests' bucket: far ahead, so that the TTL index, which deletes by the real
// clock, never deletes a test's buckets.
var minute = time.Date(2126, 11, 21, 13, 5, 0, 0, time.UTC)

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
	if doc["window_start"] != "2126-11-21T13:05Z" || doc["scope"] != "anonymous_create" {
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
		{"k1", minute.Add(time.Minute), -1}, // released again: stays 0
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
	n, err := s.coll.CountDocuments(ctx, bson.D{{Key: "window_start", Value: "2126-11-21T13:10Z"}})
	if err != nil || n != 0 {
		t.Fatalf("decrement created %d documents (%v)", n, err)
	}
	// Nor does a decrement take a count below zero.
	n, err = s.coll.CountDocuments(ctx, bson.D{{Key: "count", Value: bson.D{{Key: "$lt", Value: 0}}}})
	if err != nil || n != 0 {
		t.Fatalf("%d buckets count below zero (%v)", n, err)
	}
}

func TestUniqueBucketIndex(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	doc := bson.D{{Key: "scope", Value: "anonymous_create"}, {Key: "identity_key", Value: "k"},
		{Key: "window_start", Value: "2126-11-21T13:05Z"}, {Key: "count", Value: 1}}
	if _, err := s.coll.InsertOne(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if _, err := s.coll.InsertOne(ctx, doc); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("second insert of the same bucket = %v, want duplicate key", err)
	}
}

// An increment moves expires_at later when the window grew, never earlier.
func TestAddKeepsTheLatestExpiry(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	b := bucket("k1", minute)
	for _, exp := range []time.Time{b.ExpiresAt, b.ExpiresAt.Add(time.Hour), b.ExpiresAt} {
		b.ExpiresAt = exp
		if err := s.Add(ctx, b, 1); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Buckets(ctx, b.Scope, b.Key, time.Time{})
	if err != nil || len(got) != 1 || got[0].Count != 3 || !got[0].ExpiresAt.Equal(bucket("k1", minute).ExpiresAt.Add(time.Hour)) {
		t.Fatalf("Buckets = %+v, %v; want count 3 expiring an hour after the first expiry", got, err)
	}
}

// TestConcurrentAddsOfOneNewBucket: 64 writers add to a bucket that does not exist yet, all
// at once, so their upserts race to create it (and may answer duplicate key, which Add
// retries); every unit counts, in one document.
func TestConcurrentAddsOfOneNewBucket(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	const writers = 64
	for round := range 3 {
		start := minute.Add(time.Duration(round) * time.Minute)
		ready := make(chan struct{})
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				<-ready
				// The deadline of a reservation's ledger write in the service.
				ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				if err := s.Add(ctx, bucket("k1", start), 1); err != nil {
					t.Errorf("add: %v", err)
				}
			})
		}
		close(ready)
		wg.Wait()
		got, err := s.Buckets(ctx, "anonymous_create", "k1", start)
		if err != nil || len(got) != 1 || got[0].Count != writers {
			t.Fatalf("round %d: Buckets = %+v, %v; want one bucket counting %d", round, got, err, writers)
		}
	}
}

// indexSpec is what listIndexes answers about one index.
type indexSpec struct {
	Name               string   `bson:"name"`
	Key                bson.D   `bson:"key"`
	ExpireAfterSeconds *float64 `bson:"expireAfterSeconds"`
}

// expiresAtIndexes returns the indexes of quota_usage whose key is {expires_at: 1}.
func expiresAtIndexes(t *testing.T, db *mongo.Database) []indexSpec {
	t.Helper()
	cur, err := db.Collection(Collection).Indexes().List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var all []indexSpec
	if err := cur.All(context.Background(), &all); err != nil {
		t.Fatal(err)
	}
	var out []indexSpec
	for _, ix := range all {
		if len(ix.Key) == 1 && ix.Key[0].Key == "expires_at" {
			out = append(out, ix)
		}
	}
	return out
}

// A bucket is deleted by the store itself once its expires_at has passed: a TTL index on
// expires_at that expires at the field's own time.
func TestExpiresAtIsATTLIndex(t *testing.T) {
	_, db := newStore(t)
	ix := expiresAtIndexes(t, db)
	if len(ix) != 1 {
		t.Fatalf("indexes on expires_at: %v, want one", ix)
	}
	if after := ix[0].ExpireAfterSeconds; after == nil || *after != 0 {
		t.Fatalf("index %+v: want expireAfterSeconds 0, a TTL index expiring at expires_at itself", ix[0])
	}
}

// A database at schema version 0 holds a plain index on expires_at; Prepare replaces it by
// the TTL index.
func TestPrepareReplacesThePlainExpiresAtIndex(t *testing.T) {
	db := testenv.Mongo(t)
	ctx := context.Background()
	_, err := db.Collection(Collection).Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "expires_at", Value: 1}}, Options: options.Index().SetName("expires_at")})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := Prepare(ctx, db); err != nil {
			t.Fatalf("Prepare: %v", err)
		}
	}
	ix := expiresAtIndexes(t, db)
	if len(ix) != 1 || ix[0].Name != "expires_at_ttl" || ix[0].ExpireAfterSeconds == nil {
		t.Fatalf("indexes on expires_at after Prepare: %v, want only expires_at_ttl", ix)
	}
}
