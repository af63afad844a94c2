// Package linktest is the link service's one test seam for end-to-end tests: it changes a
// stored link the way features still to come (moderation, renewal, soft deletion) will, with
// the service's own store and cache code, then broadcasts the change as the service does.
// Tests outside this module use it instead of writing the link database or Redis keys
// themselves, so a change of those internals cannot silently break or falsify them. It is
// never linked into the service.
package linktest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/services/link/internal/cache"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
	"github.com/linkmesh/linkmesh/services/link/internal/store"
)

// Change names the fields to set; nil fields stay as they are. It is the store's own type.
type Change = links.Change

// Event is an event a Change writes into the link's outbox, as the service's changes do.
type Event = links.Event

// NewEvent returns a fresh event of type typ at at.
func NewEvent(typ string, at time.Time) Event { return links.NewEvent(typ, at) }

// Set applies ch to the link with code in db (the link service's own database) and drops
// every cached copy of it through rdb: the link service's Redis copy at once, every
// gateway's copy by the invalidation broadcast.
func Set(ctx context.Context, db *mongo.Database, rdb redis.UniversalClient, code string, ch Change) error {
	st, err := store.New(ctx, db)
	if err != nil {
		return err
	}
	if err := st.Update(ctx, code, ch); err != nil {
		return err
	}
	cache.New(rdb, slog.New(slog.NewTextHandler(io.Discard, nil))).Invalidate(ctx, code)
	return nil
}

// Load stores n links of ownerID in db, created a second apart back from now, destinations
// "https://93.184.216.34/load/<i>", for benchmarks of an owner with many links. It returns
// their codes, newest first.
func Load(ctx context.Context, db *mongo.Database, ownerID, prefix string, n int, now time.Time) ([]string, error) {
	st, err := store.New(ctx, db)
	if err != nil {
		return nil, err
	}
	codes := make([]string, 0, n)
	batch := make([]links.Link, 0, 500)
	for i := range n {
		code := fmt.Sprintf("%s%06d", prefix, i)
		created := now.Add(-time.Duration(i) * time.Second).UTC().Truncate(time.Millisecond)
		batch = append(batch, links.Link{ID: fmt.Sprintf("%s-%d", prefix, i), ShortCode: code, OwnerID: ownerID,
			DestinationURL: fmt.Sprintf("https://93.184.216.34/load/%d", i), CreatedAt: created,
			ExpiresAt: created.AddDate(0, 0, 30), Status: link.StatusActive})
		codes = append(codes, code)
		if len(batch) == cap(batch) || i == n-1 {
			if err := st.InsertMany(ctx, batch); err != nil {
				return nil, err
			}
			batch = batch[:0]
		}
	}
	return codes, nil
}
