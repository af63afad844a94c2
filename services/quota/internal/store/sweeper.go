package store

import (
	"context"
	"log/slog"
	"time"
)

// SweepInterval is how often expired buckets are deleted. MongoDB's TTL indexes would do it,
// but FerretDB has none, so the owning service sweeps.
const SweepInterval = 10 * time.Minute

// Sweeper deletes expired buckets periodically.
type Sweeper struct {
	Store    *Store
	Interval time.Duration
	Now      func() time.Time
	Logger   *slog.Logger
}

// Run sweeps every Interval until ctx ends. Every replica sweeps; DeleteMany of the same
// documents twice is harmless.
func (s Sweeper) Run(ctx context.Context) {
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sweepOnce(ctx)
		}
	}
}

func (s Sweeper) sweepOnce(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, err := s.Store.DeleteExpired(ctx, s.Now())
	if err != nil {
		s.Logger.WarnContext(ctx, "sweep quota buckets failed", "err", err)
		return
	}
	if n > 0 {
		s.Logger.InfoContext(ctx, "swept expired quota buckets", "deleted", n)
	}
}
