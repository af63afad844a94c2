package store

import (
	"context"
	"log/slog"
	"time"
)

// SweepInterval is how often expired sessions are deleted. MongoDB's TTL indexes would do
// it, but FerretDB has none, so the service sweeps. Expired sessions are refused by the
// lookup itself, so the interval only bounds how long they take space.
const SweepInterval = 10 * time.Minute

// Sweeper deletes expired sessions periodically.
type Sweeper struct {
	Store    *Store
	Interval time.Duration
	Now      func() time.Time
	Logger   *slog.Logger
}

// Run sweeps every Interval until ctx ends. Every replica sweeps; deleting the same
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
	n, err := s.Store.DeleteExpiredSessions(ctx, s.Now())
	if err != nil {
		s.Logger.WarnContext(ctx, "sweep sessions failed", "err", err)
		return
	}
	if n > 0 {
		s.Logger.InfoContext(ctx, "swept expired sessions", "deleted", n)
	}
}
