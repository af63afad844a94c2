// Package linktest is the link service's one test seam for end-to-end tests: it changes a
// stored link the way features still to come (moderation, renewal, soft deletion) will, with
// the service's own store and cache code, then broadcasts the change as the service does.
// Tests outside this module use it instead of writing the link database or Redis keys
// themselves, so a change of those internals cannot silently break or falsify them. It is
// never linked into the service.
package linktest

import (
	"context"
	"io"
	"log/slog"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/services/link/internal/cache"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
	"github.com/linkmesh/linkmesh/services/link/internal/store"
)

// Change names the fields to set; nil fields stay as they are. It is the store's own type.
type Change = links.Change

// Set applies ch to the link with code in db (the link service's own database) and drops
// every cached copy of it through rdb: the link service's Redis copy at once, every
// gateway's copy by the invalidation broadcast.
func Set(ctx context.Context, db *mongo.Database, rdb *redis.Client, code string, ch Change) error {
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
