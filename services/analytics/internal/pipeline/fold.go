// Package pipeline runs the analytics service's work on the clicks stream: the consumer that
// stores clicks, and the fold that adds stored clicks to the rollups under one leader.
package pipeline

import (
	"github.com/linkmesh/linkmesh/pkg/logging"

	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// leaderKey is the Redis key naming the replica that folds.
const leaderKey = "linkmesh:analytics:fold-leader"

// Lease timing: the leader renews every leaseRenew, also while it folds; a leader that stops
// renewing (killed, partitioned) is replaced leaseTTL later, and a leader whose renewal
// fails stops folding at once.
const (
	leaseTTL   = 15 * time.Second
	leaseRenew = 3 * time.Second
)

// slotGrace is how long after a slot ends it is folded: longer than any save in flight
// (bounded by saveTimeout) plus clock skew between replicas.
const slotGrace = 15 * time.Second

var renewLease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0`)

// Folder folds closed slots into the rollups. Every replica runs one; a Redis lease picks
// the one that works, so no two replicas ever update a rollup at once.
type Folder struct {
	Store  *store.Store
	Redis  *redis.Client
	Logger *slog.Logger
	Now    func() time.Time
	// Interval is how often the leader looks for closed slots (default 1s).
	Interval time.Duration
	// leaseFailures spaces out the log lines of a Redis that cannot be asked for the lease.
	leaseFailures *logging.Limiter
}

// Run folds until ctx ends.
func (f Folder) Run(ctx context.Context) {
	if f.Interval == 0 {
		f.Interval = time.Second
	}
	f.leaseFailures = &logging.Limiter{Every: time.Minute}
	var b [12]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	defer func() {
		// Hand the lease over at once rather than after leaseTTL.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = f.Redis.Eval(rctx, `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`, []string{leaderKey}, token).Err()
		cancel()
	}()
	t := time.NewTicker(f.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !f.hold(ctx, token) {
			continue
		}
		if err := f.foldWhileLeader(ctx, token); err != nil && ctx.Err() == nil {
			f.Logger.WarnContext(ctx, "fold failed; retrying", "err", err)
		}
	}
}

// hold takes the lease, or keeps it if it is ours, and reports whether we hold it.
func (f Folder) hold(ctx context.Context, token string) bool {
	ok, err := renewLease.Run(ctx, f.Redis, []string{leaderKey}, token, leaseTTL.Milliseconds()).Int()
	if err != nil && ctx.Err() == nil {
		if allow, suppressed := f.leaseFailures.Allow(time.Now()); allow {
			f.Logger.WarnContext(ctx, "fold lease unavailable; not folding", "err", err, "suppressed", suppressed)
		}
	}
	return err == nil && ok == 1
}

// foldWhileLeader folds every closed slot not folded yet, renewing the lease meanwhile;
// the moment a renewal fails the fold stops, before another replica can take over.
func (f Folder) foldWhileLeader(ctx context.Context, token string) error {
	lctx, lost := context.WithCancel(ctx)
	defer lost()
	go func() {
		t := time.NewTicker(leaseRenew)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
				if !f.hold(lctx, token) {
					lost()
					return
				}
			}
		}
	}()
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
