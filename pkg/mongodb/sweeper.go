package mongodb

import (
	"context"
	"log/slog"
	"time"
)

// Sweeper deletes expired documents periodically. MongoDB's TTL indexes would do it, but
// FerretDB has none, so the owning service sweeps. Every replica sweeps; deleting the same
// documents twice is harmless.
type Sweeper struct {
	// What names the documents in log lines ("sessions").
	What     string
	Interval time.Duration
	// Delete removes the documents expired at now and says how many it removed.
	Delete func(ctx context.Context, now time.Time) (int64, error)
	Now    func() time.Time
	Logger *slog.Logger
}

// Run sweeps every Interval until ctx ends.
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
	n, err := s.Delete(ctx, s.Now())
	if err != nil {
		s.Logger.WarnContext(ctx, "sweep failed", "what", s.What, "err", err)
		return
	}
	if n > 0 {
		s.Logger.InfoContext(ctx, "swept expired documents", "what", s.What, "deleted", n)
	}
}
