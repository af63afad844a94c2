package mongodb

import (
	"context"
	"log/slog"
	"time"
)

// Sweeper settles documents that fell due, periodically, where a TTL index cannot: a
// deletion with steps of its own, or a date pushed forward. Every replica sweeps; settling
// the same documents twice is harmless.
type Sweeper struct {
	// What names the documents in log lines ("sessions").
	What     string
	Interval time.Duration
	// Delete settles the documents due at now and says how many it changed.
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
		s.Logger.InfoContext(ctx, "swept", "what", s.What, "documents", n)
	}
}
