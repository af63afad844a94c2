package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// createGroup starts the group at the beginning of the stream, so that a group created
// after the producers started (or recreated after Redis lost it) misses nothing kept.
func (w *Worker) createGroup(ctx context.Context) error {
	err := w.opts.Client.XGroupCreateMkStream(ctx, w.opts.Stream, w.opts.Group, "0").Err()
	if err != nil && !isReply(err, "BUSYGROUP") {
		return fmt.Errorf("create group %s on %s: %w", w.opts.Group, w.opts.Stream, err)
	}
	return nil
}

// read reads and handles one batch: the next of the worker's own pending entries while
// in backlog, new entries otherwise.
func (w *Worker) read(ctx context.Context, pos *position) error {
	id, count := ">", w.opts.BatchSize
	if pos.backlog != "" {
		id = pos.backlog
		if pos.isolate {
			count = 1
		}
	}
	res, err := w.opts.Client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: w.opts.Group, Consumer: w.opts.Consumer,
		Streams: []string{w.opts.Stream, id}, Count: count, Block: w.opts.Block}).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read %s: %w", w.opts.Stream, err)
	}
	var xs []redis.XMessage
	for _, s := range res {
		xs = append(xs, s.Messages...)
	}
	if len(xs) == 0 {
		if pos.backlog != "" {
			pos.backlog, pos.isolate = "", false
		}
		return nil
	}
	if ctx.Err() != nil {
		// What was just read stays pending, for a restart under this name or a reclaim.
		return nil
	}
	if err := w.deliver(ctx, xs, pos.backlog != ""); err != nil {
		return err
	}
	if pos.backlog != "" {
		pos.backlog = xs[len(xs)-1].ID
	}
	return nil
}
