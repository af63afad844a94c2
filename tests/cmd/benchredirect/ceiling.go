package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mopts "go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// The store's own ceiling for clicks: what the MongoDB wire server alone, with the machine to
// itself, takes to store raw click records as the analytics consumer does — a batch inserted
// pending, read back by its batch id, then marked applied — without the gateway, Redis, the
// services or the rollups' writes (one per rollup per batch, not per click). Documents,
// indexes and batches are shaped as the consumer's.
const (
	ceilingLoad    = 10 * time.Second
	ceilingWriters = 4
	ceilingBatch   = 1000 // the stream worker's batch
)

// clickStoreCeiling measures that ceiling on a scratch copy of link_clicks and prints it
// against the bare handler's rate.
func clickStoreCeiling(ctx context.Context, b *stack.Bench, bareRPS float64) error {
	src := b.DB("analytics").Collection("link_clicks")
	coll := b.DB("scratch").Collection("link_clicks")
	if err := stack.CopyIndexes(ctx, src, coll); err != nil {
		return err
	}
	var n, read atomic.Int64
	var firstErr error
	var once sync.Once
	fail := func(err error) { once.Do(func() { firstErr = err }) }
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(ceilingLoad)
	now := time.Now().UTC()
	pending := bson.E{Key: "pending", Value: bson.D{{Key: "$exists", Value: true}}}
	for w := range ceilingWriters {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				batch := bson.NewObjectID()
				docs := make([]any, ceilingBatch)
				for i := range docs {
					k := n.Add(1)
					docs[i] = bson.D{{Key: "_id", Value: fmt.Sprintf("%d-%d", w, k)}, {Key: "link_id", Value: fmt.Sprintf("link%d", k%1000)},
						{Key: "owner_id", Value: "owner"}, {Key: "clicked_at", Value: now}, {Key: "day", Value: now.Format(time.DateOnly)},
						{Key: "country", Value: "DE"}, {Key: "referrer", Value: "example.com"}, {Key: "device_type", Value: "desktop"},
						{Key: "browser", Value: "Chrome"}, {Key: "os", Value: "Linux"}, {Key: "visitor", Value: fmt.Sprintf("link%d|v%d", k%1000, k)},
						{Key: "expires_at", Value: now.Add(90 * 24 * time.Hour)}, {Key: "pending", Value: now}, {Key: "batch", Value: batch}}
				}
				if _, err := coll.InsertMany(ctx, docs, mopts.InsertMany().SetOrdered(false)); err != nil {
					fail(err)
					return
				}
				cur, err := coll.Find(ctx, bson.D{{Key: "batch", Value: batch}, pending})
				if err != nil {
					fail(err)
					return
				}
				for cur.Next(ctx) {
					read.Add(1)
				}
				cur.Close(ctx)
				if _, err := coll.UpdateMany(ctx, bson.D{{Key: "batch", Value: batch}, pending},
					bson.D{{Key: "$unset", Value: bson.D{{Key: "pending", Value: ""}, {Key: "batch", Value: ""}}}}); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("click store ceiling: %w", firstErr)
	}
	stored, took := n.Load(), time.Since(start)
	if read.Load() != stored {
		return fmt.Errorf("click store ceiling: %d records stored, %d read back", stored, read.Load())
	}
	rate := float64(stored) / took.Seconds()
	fmt.Printf("   the store alone (nothing else running): %d raw click records inserted pending, read back by batch and marked\n"+
		"   applied in %s (%d writers, batches of %d): %.0f clicks/s = %.3f× the bare handler — the ceiling of the figure above\n",
		stored, took.Round(100*time.Millisecond), ceilingWriters, ceilingBatch, rate, rate/bareRPS)
	return coll.Drop(ctx)
}
