package stream_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// newWorker builds a worker with test-sized timings; opts set them otherwise.
func newWorker(t *testing.T, rdb redis.UniversalClient, opts stream.WorkerOptions) *stream.Worker {
	t.Helper()
	opts.Client, opts.Logger = rdb, logger(t)
	if opts.Block == 0 {
		opts.Block = 100 * time.Millisecond
	}
	if opts.Backoff == 0 {
		opts.Backoff, opts.MaxBackoff = 10*time.Millisecond, 100*time.Millisecond
	}
	return must(stream.NewWorker(opts))(t)
}

func TestProducedEntriesAreAllHandledAndAcknowledged(t *testing.T) {
	const n = 500
	rdb, s := testenv.Redis(t), testenv.Name("stream")
	p := must(stream.NewProducer(stream.ProducerOptions{Client: rdb, Stream: s, Logger: logger(t),
		BatchSize: 50, FlushInterval: 20 * time.Millisecond}))(t)
	st := newStore()
	w := newWorker(t, rdb, stream.WorkerOptions{Stream: s, Group: "g", BatchSize: 64, Handler: st.handle})
	run(t, w.Run)
	stopProducer := run(t, p.Run)
	for i := range n {
		if !p.Enqueue(map[string]any{"id": businessID(i), "n": i}) {
			t.Fatalf("entry %d refused by a producer with room for 10000", i)
		}
	}
	eventually(t, "every entry handled and acknowledged", func() bool {
		return st.distinct() == n && w.Stats().Acked == n
	})
	stopProducer()
	if got := pending(t, rdb, s, "g").Count; got != 0 {
		t.Errorf("%d entries still pending", got)
	}
	if p.Sent() != n || p.Dropped() != 0 || p.Failed() != 0 || p.Pending() != 0 {
		t.Errorf("producer sent %d, dropped %d, failed %d, pending %d; want %d sent, nothing else",
			p.Sent(), p.Dropped(), p.Failed(), p.Pending(), n)
	}
	if got := w.Stats(); got.Handled != n || got.Reclaimed != 0 || got.DeadLettered != 0 || got.Failures != 0 {
		t.Errorf("worker stats %+v, want %d handled and nothing else", got, n)
	}
}

func TestKilledConsumersEntriesAreReclaimed(t *testing.T) {
	const n, batch = 200, 50
	rdb, s := testenv.Redis(t), testenv.Name("stream")
	add(t, rdb, s, 0, n)
	st := newStore()

	// A takes a batch into the store, then dies before acknowledging it.
	var inHand atomic.Int64
	a := newWorker(t, rdb, stream.WorkerOptions{Stream: s, Group: "g", Consumer: "a", BatchSize: batch,
		Handler: func(ctx context.Context, msgs []stream.Message) error {
			st.record(msgs)
			inHand.Store(int64(len(msgs)))
			<-ctx.Done()
			return ctx.Err()
		}})
	stopA := run(t, a.Run)
	eventually(t, "A to hold a batch", func() bool { return inHand.Load() > 0 })
	stopA()
	if held := pending(t, rdb, s, "g").Consumers["a"]; held != batch {
		t.Fatalf("A left %d entries pending, want its whole batch of %d", held, batch)
	}

	b := newWorker(t, rdb, stream.WorkerOptions{Stream: s, Group: "g", Consumer: "b", BatchSize: batch,
		ClaimMinIdle: 500 * time.Millisecond, ClaimInterval: 100 * time.Millisecond, Handler: st.handle})
	run(t, b.Run)
	eventually(t, "B to handle every entry", func() bool {
		return st.distinct() == n && pending(t, rdb, s, "g").Count == 0
	})
	twice := 0
	for i := range n {
		switch c := st.count(businessID(i)); {
		case c == 2:
			twice++
		case c != 1:
			t.Errorf("entry %s delivered %d times", businessID(i), c)
		}
	}
	if twice != batch {
		t.Errorf("%d entries delivered twice, want A's %d", twice, batch)
	}
	if got := b.Stats(); got.Reclaimed != batch || got.Acked != n {
		t.Errorf("B stats %+v, want %d reclaimed and %d acknowledged", got, batch, n)
	}
}

func TestRestartedConsumerResumesItsPendingEntries(t *testing.T) {
	const n = 30
	rdb, s := testenv.Redis(t), testenv.Name("stream")
	add(t, rdb, s, 0, n)
	var inHand atomic.Bool
	first := newWorker(t, rdb, stream.WorkerOptions{Stream: s, Group: "g", Consumer: "c", BatchSize: n,
		Handler: func(ctx context.Context, _ []stream.Message) error {
			inHand.Store(true)
			<-ctx.Done()
			return ctx.Err()
		}})
	stop := run(t, first.Run)
	eventually(t, "the first run to hold the entries", inHand.Load)
	stop()
	if held := pending(t, rdb, s, "g").Consumers["c"]; held != n {
		t.Fatalf("the first run left %d entries pending, want %d", held, n)
	}

	st := newStore()
	again := newWorker(t, rdb, stream.WorkerOptions{Stream: s, Group: "g", Consumer: "c", ClaimMinIdle: time.Hour,
		Handler: st.handle})
	run(t, again.Run)
	eventually(t, "the restarted consumer to handle its entries", func() bool {
		return st.distinct() == n && pending(t, rdb, s, "g").Count == 0
	})
	if got := again.Stats(); got.Reclaimed != 0 || got.Acked != n {
		t.Errorf("stats %+v, want %d acknowledged without reclaiming", got, n)
	}
}

func TestFailingHandlerLeavesEntriesPendingUntilItRecovers(t *testing.T) {
	const n = 20
	rdb, s := testenv.Redis(t), testenv.Name("stream")
	add(t, rdb, s, 0, n)
	st := newStore()
	var down atomic.Bool
	down.Store(true)
	w := newWorker(t, rdb, stream.WorkerOptions{Stream: s, Group: "g", MaxDeliveries: 1_000_000,
		Handler: func(ctx context.Context, msgs []stream.Message) error {
			if down.Load() {
				return errors.New("database down")
			}
			return st.handle(ctx, msgs)
		}})
	run(t, w.Run)
	eventually(t, "a few failed attempts", func() bool { return w.Stats().Failures >= 3 })
	if got := pending(t, rdb, s, "g").Count; got != n {
		t.Fatalf("%d entries pending while the handler fails, want all %d", got, n)
	}
	if got := w.Stats(); got.Acked != 0 || got.Handled != 0 {
		t.Fatalf("stats %+v while the handler fails, want nothing handled or acknowledged", got)
	}

	down.Store(false)
	eventually(t, "every entry handled after recovery", func() bool {
		return st.distinct() == n && pending(t, rdb, s, "g").Count == 0
	})
	if got := w.Stats(); got.DeadLettered != 0 || got.Acked != n {
		t.Errorf("stats %+v, want %d acknowledged, none dead-lettered", got, n)
	}
}
