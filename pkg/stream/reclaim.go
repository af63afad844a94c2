package stream

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// reclaim takes over the entries that have sat unacknowledged for ClaimMinIdle, whoever
// holds them, a batch at a time, handling and acknowledging each batch before claiming the
// next: claiming everything first would leave the last batches idle long enough for
// another replica to claim them again. Then it forgets long-silent consumers.
func (w *Worker) reclaim(ctx context.Context) error {
	start := "0-0"
	for ctx.Err() == nil {
		xs, next, err := w.opts.Client.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: w.opts.Stream,
			Group: w.opts.Group, Consumer: w.opts.Consumer, MinIdle: w.opts.ClaimMinIdle, Start: start,
			Count: w.opts.BatchSize}).Result()
		if err != nil {
			return fmt.Errorf("claim idle entries of %s: %w", w.opts.Stream, err)
		}
		if len(xs) > 0 {
			w.reclaimed.Add(int64(len(xs)))
			w.log.InfoContext(ctx, "stream entries reclaimed", "count", len(xs), "first", xs[0].ID)
			if err := w.deliver(ctx, xs, true); err != nil {
				return err
			}
		}
		if next == "0-0" || next == "" {
			break
		}
		start = next
	}
	if w.opts.ForgetIdle > 0 {
		if err := w.forgetIdle(ctx); err != nil {
			w.warn(ctx, "stream consumer cleanup failed", err)
		}
	}
	return nil
}

// forgetIdle deletes the consumers of the group that have nothing pending and have not
// read for ForgetIdle: consumers of processes long gone. A live worker reads every Block,
// so it is never that idle, and one holding nothing loses nothing by being deleted.
func (w *Worker) forgetIdle(ctx context.Context) error {
	consumers, err := w.opts.Client.XInfoConsumers(ctx, w.opts.Stream, w.opts.Group).Result()
	if err != nil {
		return fmt.Errorf("list consumers of %s: %w", w.opts.Group, err)
	}
	for _, c := range consumers {
		if c.Name == w.opts.Consumer || c.Pending > 0 || c.Idle < w.opts.ForgetIdle {
			continue
		}
		if err := w.opts.Client.XGroupDelConsumer(ctx, w.opts.Stream, w.opts.Group, c.Name).Err(); err != nil {
			return fmt.Errorf("delete consumer %s: %w", c.Name, err)
		}
		w.log.InfoContext(ctx, "idle stream consumer deleted", "idle_consumer", c.Name, "idle", c.Idle)
	}
	return nil
}
