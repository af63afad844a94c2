// Package pipeline runs the analytics service's work on the clicks stream: the consumer that
// stores clicks, and the fold that adds stored clicks to the rollups under one leader.
package pipeline

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/redisdb"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// leaderKey is the Redis key naming the replica that folds.
const leaderKey = "linkmesh:analytics:fold-leader"

// slotGrace is how long after a slot ends it is folded: longer than any save in flight
// (bounded by saveTimeout) plus clock skew between replicas.
const slotGrace = 15 * time.Second

// Folder folds closed slots into the rollups. Every replica runs one; a Redis lease picks
// the one that works, so no two replicas ever update a rollup at once.
type Folder struct {
	Store  *store.Store
	Redis  redis.UniversalClient
	Logger *slog.Logger
	Now    func() time.Time
	// Interval is how often the leader looks for closed slots (default 1s).
	Interval time.Duration
}

// Run folds, while this replica leads, until ctx ends.
func (f Folder) Run(ctx context.Context) {
	redisdb.Leader{Key: leaderKey, Redis: f.Redis, Logger: f.Logger, What: "fold", Interval: f.Interval, Work: f.fold}.Run(ctx)
}

// fold folds every closed slot not folded yet; lctx ends the moment the lease is lost.
func (f Folder) fold(lctx context.Context) error {
	now := f.Now()
	closed := store.Slot(now.Add(-slotGrace)) - 1
	next, err := f.Store.NextSlot(lctx, closed)
	if err != nil {
		return err
	}
	if err := f.Store.ApplyPurges(lctx); err != nil {
		return err
	}
	purged, err := f.Store.PurgedLinks(lctx)
	if err != nil {
		return err
	}
	// Slots folded by a version without monthly rollups (or before them) get them before
	// any slot is folded into them; otherwise one read.
	start := time.Now()
	rebuilt, links, err := f.Store.BuildMonthly(lctx, purged)
	if err != nil {
		return err
	}
	if rebuilt {
		f.Logger.InfoContext(lctx, "monthly rollups rebuilt from the daily ones", "links", links, "next_slot", next, "took", time.Since(start).Round(time.Millisecond))
	}
	for slot := next; slot <= closed; slot++ {
		// A slot holds what the consumers stored in 10 s, which may take a while to read.
		sctx, cancel := context.WithTimeout(lctx, slotTimeout)
		err := f.Store.FoldSlot(sctx, slot, purged)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// slotTimeout bounds the fold of one slot.
const slotTimeout = 5 * time.Minute
