package stream

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ackTimeout bounds the acknowledgement of a handled batch, which goes ahead even when the
// worker is stopping: the work is done, and an unacknowledged batch would be done twice.
const ackTimeout = 5 * time.Second

// handlerError marks a failure of the handler rather than of Redis.
type handlerError struct{ err error }

func (e handlerError) Error() string { return "handle entries: " + e.err.Error() }
func (e handlerError) Unwrap() error { return e.err }

// deliver hands xs to the handler and acknowledges them once it returned nil. Entries that
// were delivered before (recheck) first have their delivery count checked, and those past
// MaxDeliveries go to the dead-letter stream instead.
func (w *Worker) deliver(ctx context.Context, xs []redis.XMessage, recheck bool) error {
	msgs, gone := toMessages(xs)
	if recheck && len(msgs) > 0 {
		var err error
		if msgs, err = w.dropPoison(ctx, msgs); err != nil {
			return err
		}
	}
	ids := gone
	if len(msgs) > 0 {
		if err := w.opts.Handler(ctx, msgs); err != nil {
			w.failures.Add(1)
			return handlerError{err}
		}
		w.handled.Add(int64(len(msgs)))
		for _, m := range msgs {
			ids = append(ids, m.ID)
		}
	}
	return w.ack(ctx, ids)
}

func (w *Worker) ack(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
	defer cancel()
	n, err := w.opts.Client.XAck(ctx, w.opts.Stream, w.opts.Group, ids...).Result()
	if err != nil {
		return fmt.Errorf("acknowledge %d entries: %w", len(ids), err)
	}
	w.acked.Add(n)
	return nil
}

// dropPoison moves the entries delivered more than MaxDeliveries times to the dead-letter
// stream and returns the others. The counts come from XPENDING, one pipelined call per
// entry, as a range query would also return other entries of the group.
func (w *Worker) dropPoison(ctx context.Context, msgs []Message) ([]Message, error) {
	pipe := w.opts.Client.Pipeline()
	cmds := make([]*redis.XPendingExtCmd, len(msgs))
	for i, m := range msgs {
		cmds[i] = pipe.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: w.opts.Stream, Group: w.opts.Group,
			Start: m.ID, End: m.ID, Count: 1})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("read delivery counts: %w", err)
	}
	keep := make([]Message, 0, len(msgs))
	for i, m := range msgs {
		p := cmds[i].Val()
		if len(p) == 0 || p[0].RetryCount <= w.opts.MaxDeliveries {
			keep = append(keep, m)
			continue
		}
		if err := w.deadLetter(ctx, m, p[0].RetryCount); err != nil {
			return nil, err
		}
	}
	return keep, nil
}

// deadLetter copies m to the dead-letter stream and acknowledges it, in one transaction so
// that the entry is never both lost and acknowledged.
func (w *Worker) deadLetter(ctx context.Context, m Message, deliveries int64) error {
	values := make(map[string]any, len(m.Values)+3)
	for k, v := range m.Values {
		values[k] = v
	}
	values[FieldDeadID] = m.ID
	values[FieldDeadGroup] = w.opts.Group
	values[FieldDeadDeliveries] = strconv.FormatInt(deliveries, 10)
	dead := DeadStream(w.opts.Stream)
	var ack *redis.IntCmd
	_, err := w.opts.Client.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: dead, MaxLen: w.opts.DeadMaxLen, Approx: true, Values: values})
		ack = pipe.XAck(ctx, w.opts.Stream, w.opts.Group, m.ID)
		return nil
	})
	if err != nil {
		return fmt.Errorf("dead-letter entry %s: %w", m.ID, err)
	}
	w.dead.Add(1)
	w.acked.Add(ack.Val())
	w.log.WarnContext(ctx, "stream entry dead-lettered", "id", m.ID, "deliveries", deliveries, "dead_stream", dead)
	return nil
}
