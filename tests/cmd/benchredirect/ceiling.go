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
// itself, takes to store raw click records and read them back by storage slot — the two
// things every click costs it (the analytics consumer inserts, the fold reads), without the
// gateway, Redis or the services. Documents, indexes and batches are shaped as the consumer's.
const (
	ceilingLoad    = 10 * time.Second
	ceilingWriters = 4
	ceilingBatch   = 100    // the stream worker's batch
	ceilingSlot    = 10_000 // records per slot read back
)

// clickStoreCeiling measures that ceiling on a scratch copy of link_clicks and prints it
// against the bare handler's rate.
func clickStoreCeiling(ctx context.Context, b *stack.Bench, bareRPS float64) error {
	src := b.DB("analytics").Collection("link_clicks")
	coll := b.DB("scratch").Collection("link_clicks")
	if err := stack.CopyIndexes(ctx, src, coll); err != nil {
		return err
	}
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(ceilingLoad)
	now := time.Now().UTC()
	for w := range ceilingWriters {
		wg.Go(func() {
			for batch := 0; time.Now().Before(end); batch++ {
				docs := make([]any, ceilingBatch)
				for i := range docs {
					k := n.Add(1)
					docs[i] = bson.D{{Key: "_id", Value: fmt.Sprintf("%d-%d-%d", w, batch, i)}, {Key: "link_id", Value: fmt.Sprintf("link%d", k%1000)},
						{Key: "owner_id", Value: "owner"}, {Key: "clicked_at", Value: now}, {Key: "day", Value: now.Format(time.DateOnly)},
						{Key: "country", Value: "DE"}, {Key: "referrer", Value: "example.com"}, {Key: "device_type", Value: "desktop"},
						{Key: "browser", Value: "Chrome"}, {Key: "os", Value: "Linux"}, {Key: "slot", Value: k / ceilingSlot}}
				}
				if _, err := coll.InsertMany(ctx, docs, mopts.InsertMany().SetOrdered(false)); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("click store ceiling: %w", firstErr)
	}
	stored, insertTook := n.Load(), time.Since(start)
	start = time.Now()
	var read int64
	for slot := int64(0); slot <= stored/ceilingSlot; slot++ {
		cur, err := coll.Find(ctx, bson.D{{Key: "slot", Value: slot}})
		if err != nil {
			return fmt.Errorf("click store ceiling: %w", err)
		}
		for cur.Next(ctx) {
			read++
		}
		if err := cur.Err(); err != nil {
			return fmt.Errorf("click store ceiling: %w", err)
		}
		cur.Close(ctx)
	}
	readTook := time.Since(start)
	if read != stored {
		return fmt.Errorf("click store ceiling: %d records stored, %d read back", stored, read)
	}
	rate := float64(stored) / (insertTook + readTook).Seconds()
	fmt.Printf("   the store alone (nothing else running): %d raw click records inserted in %s (%.0f/s, %d writers, batches of %d)\n"+
		"   and read back by slot in %s: %.0f clicks/s = %.3f× the bare handler — the ceiling of the figure above\n",
		stored, insertTook.Round(100*time.Millisecond), float64(stored)/insertTook.Seconds(), ceilingWriters, ceilingBatch,
		readTook.Round(100*time.Millisecond), rate, rate/bareRPS)
	return coll.Drop(ctx)
}
