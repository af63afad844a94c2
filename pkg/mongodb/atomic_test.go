package mongodb_test

import (
	"context"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// The store must do what the services rely on MongoDB for: single-document updates that run
// atomically on the server. These fail on a wire server that reads a document and writes it
// back in two steps (concurrent increments are lost) or whose concurrent upserts of one new
// document overwrite each other.

// TestConcurrentIncrementsAreExact: 64 writers each add 1 to one quota record 20 times.
func TestConcurrentIncrementsAreExact(t *testing.T) {
	coll := testenv.Mongo(t).Collection("quota_usage")
	ctx := context.Background()
	filter := bson.D{{Key: "scope", Value: "registered_create"}, {Key: "identity_key", Value: "u1"}, {Key: "window_start", Value: "2026-11-27T07:00Z"}}
	if _, err := coll.InsertOne(ctx, append(filter, bson.E{Key: "count", Value: 0})); err != nil {
		t.Fatal(err)
	}
	const writers, each = 64, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for range each {
				if _, err := coll.UpdateOne(ctx, filter, bson.D{{Key: "$inc", Value: bson.D{{Key: "count", Value: 1}}}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var got struct {
		Count int `bson:"count"`
	}
	if err := coll.FindOne(ctx, filter).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Count != writers*each {
		t.Fatalf("count %d after %d concurrent increments, want %d", got.Count, writers*each, writers*each)
	}
}

// TestConcurrentUpsertsOfOneNewDocument: 16 writers upsert the same new _id at once, each
// adding 1; one document holds all 16. MongoDB may answer a racing upsert with a duplicate
// key (11000), which the writer retries, as MongoDB's documentation says.
func TestConcurrentUpsertsOfOneNewDocument(t *testing.T) {
	coll := testenv.Mongo(t).Collection("link_daily")
	ctx := context.Background()
	for round := range 5 {
		id := bson.NewObjectID().Hex()
		const writers = 16
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for range writers {
			wg.Go(func() {
				<-start
				for {
					_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "clicks", Value: 1}}}},
						options.UpdateOne().SetUpsert(true))
					if mongo.IsDuplicateKeyError(err) {
						continue
					}
					if err != nil {
						errs <- err
					}
					return
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}})
		if err != nil || n != 1 {
			t.Fatalf("round %d: %d documents (%v), want 1", round, n, err)
		}
		var got struct {
			Clicks int `bson:"clicks"`
		}
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if got.Clicks != writers {
			t.Fatalf("round %d: clicks %d after %d concurrent upserts, want %d", round, got.Clicks, writers, writers)
		}
	}
}
