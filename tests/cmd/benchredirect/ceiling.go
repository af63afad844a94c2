package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	mopts "go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// The store's own ceiling for clicks: what the MongoDB wire server alone, with the machine to
// itself, takes to store raw click records as the analytics consumer does — a batch's record,
// its clicks inserted in four parts at once, the record closed — without the gateway, Redis,
// the services or the rollups' writes (one per rollup per batch, not per click). Documents,
// indexes and batches are shaped as the consumer's.
const (
	ceilingLoad    = 10 * time.Second
	ceilingWriters = 4
	ceilingBatch   = 5000 // the stream worker's batch
)

// clickStoreCeiling measures that ceiling on a scratch copy of link_clicks and prints it
// against the bare handler's rate.
func clickStoreCeiling(ctx context.Context, b *stack.Bench, bareRPS float64) error {
	src := b.DB("analytics").Collection("link_clicks")
	coll := b.DB("scratch").Collection("link_clicks")
	if err := stack.CopyIndexes(ctx, src, coll); err != nil {
		return err
	}
	batches := b.DB("scratch").Collection("click_batches")
	if err := stack.CopyIndexes(ctx, b.DB("analytics").Collection("click_batches"), batches); err != nil {
		return err
	}
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	fail := func(err error) { once.Do(func() { firstErr = err }) }
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(ceilingLoad)
	now := time.Now().UTC()
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
						{Key: "expires_at", Value: now.Add(90 * 24 * time.Hour)}, {Key: "batch", Value: batch}}
				}
				if _, err := batches.InsertOne(ctx, bson.D{{Key: "_id", Value: batch}, {Key: "stored", Value: now}, {Key: "open", Value: true},
					{Key: "expires_at", Value: now.Add(7 * 24 * time.Hour)}}); err != nil {
					fail(err)
					return
				}
				var parts sync.WaitGroup
				for p := range 4 {
					parts.Go(func() {
						if _, err := coll.InsertMany(ctx, docs[p*len(docs)/4:(p+1)*len(docs)/4], mopts.InsertMany().SetOrdered(false)); err != nil {
							fail(err)
						}
					})
				}
				parts.Wait()
				if _, err := batches.UpdateOne(ctx, bson.D{{Key: "_id", Value: batch}}, bson.D{{Key: "$unset", Value: bson.D{{Key: "open", Value: ""}}}}); err != nil {
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
	if got, err := coll.CountDocuments(ctx, bson.D{}); err != nil || got != stored {
		return fmt.Errorf("click store ceiling: %d records stored, %d found (%v)", stored, got, err)
	}
	rate := float64(stored) / took.Seconds()
	fmt.Printf("   the store alone (nothing else running): %d raw click records stored in batches as the consumer stores them\n"+
		"   in %s (%d writers, batches of %d): %.0f clicks/s = %.3f× the bare handler — the ceiling of the figure above\n",
		stored, took.Round(100*time.Millisecond), ceilingWriters, ceilingBatch, rate, rate/bareRPS)
	return errors.Join(coll.Drop(ctx), batches.Drop(ctx))
}
