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

func TestPoisonEntryIsDeadLetteredAlone(t *testing.T) {
	const n, poison, maxDeliveries = 6, 2, 3
	rdb, s := testenv.Redis(t), testenv.Name("stream")
	ctx := context.Background()
	ids := make([]string, 0, n)
	for i := range n {
		values := map[string]any{"id": businessID(i)}
		if i == poison {
			values["poison"] = "yes"
		}
		ids = append(ids, must(rdb.XAdd(ctx, &redis.XAddArgs{Stream: s, Values: values}).Result())(t))
	}
	st := newStore()
	w := newWorker(t, rdb, stream.WorkerOptions{Stream: s, Group: "g", MaxDeliveries: maxDeliveries,
		Handler: func(ctx context.Context, msgs []stream.Message) error {
			for _, m := range msgs {
				if m.Values["poison"] != "" {
					return errors.New("cannot parse entry")
				}
			}
			return st.handle(ctx, msgs)
		}})
	run(t, w.Run)
	eventually(t, "the poison entry dead-lettered and the rest handled", func() bool {
		return w.Stats().DeadLettered == 1 && st.distinct() == n-1 && pending(t, rdb, s, "g").Count == 0
	})

	dead := must(rdb.XRange(ctx, stream.DeadStream(s), "-", "+").Result())(t)
	if len(dead) != 1 {
		t.Fatalf("%d entries in %s, want only the poison one", len(dead), stream.DeadStream(s))
	}
	want := map[string]any{"id": businessID(poison), "poison": "yes", stream.FieldDeadID: ids[poison],
		stream.FieldDeadGroup: "g", stream.FieldDeadDeliveries: "4"}
	if got := dead[0].Values; len(got) != len(want) {
		t.Errorf("dead-letter entry %v, want %v", got, want)
	} else {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("dead-letter field %s = %v, want %v", k, got[k], v)
			}
		}
	}
	if st.count(businessID(poison)) != 0 {
		t.Error("the poison entry reached the store")
	}
	if got := w.Stats(); got.Acked != n || got.Handled != n-1 {
		t.Errorf("stats %+v, want %d acknowledged and %d handled", got, n, n-1)
	}
}

func TestWorkerSurvivesRedisOutageAndLostGroup(t *testing.T) {
	rdb, s := testenv.Redis(t), testenv.Name("stream")
	behind, p := redisBehindProxy(t)
	st := newStore()
	w := newWorker(t, behind, stream.WorkerOptions{Stream: s, Group: "g", Handler: st.handle})
	run(t, w.Run)
	add(t, rdb, s, 0, 10)
	eventually(t, "the entries before the outage", func() bool { return st.distinct() == 10 })

	// The outage: connections drop, and Redis comes back without the stream or its group,
	// as after a restart without persistence.
	p.setCut(true)
	if err := rdb.Del(context.Background(), s).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // let the worker fail a few times; nothing asserts on it
	add(t, rdb, s, 10, 20)
	p.setCut(false)

	eventually(t, "the entries after the outage", func() bool {
		return st.distinct() == 20 && pending(t, rdb, s, "g").Count == 0
	})
	if got := w.Stats().Acked; got != 20 {
		t.Errorf("%d entries acknowledged, want 20", got)
	}
}

func TestWorkerStopsWhileRedisIsUnreachable(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	var called atomic.Bool
	w := newWorker(t, rdb, stream.WorkerOptions{Stream: "s", Group: "g",
		Handler: func(context.Context, []stream.Message) error { called.Store(true); return nil }})
	stop := run(t, w.Run)
	time.Sleep(300 * time.Millisecond)
	stop()
	if called.Load() || w.Stats() != (stream.Stats{}) {
		t.Errorf("handler called %v, stats %+v; want nothing done without Redis", called.Load(), w.Stats())
	}
}

func TestNewWorkerRefusesIncompleteOptions(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	h := func(context.Context, []stream.Message) error { return nil }
	for _, tc := range []struct {
		name string
		opts stream.WorkerOptions
	}{
		{"no client", stream.WorkerOptions{Stream: "s", Group: "g", Handler: h}},
		{"no stream", stream.WorkerOptions{Client: rdb, Group: "g", Handler: h}},
		{"no group", stream.WorkerOptions{Client: rdb, Stream: "s", Handler: h}},
		{"no handler", stream.WorkerOptions{Client: rdb, Stream: "s", Group: "g"}},
		{"negative batch", stream.WorkerOptions{Client: rdb, Stream: "s", Group: "g", Handler: h, BatchSize: -1}},
		{"negative block", stream.WorkerOptions{Client: rdb, Stream: "s", Group: "g", Handler: h, Block: -time.Second}},
	} {
		if _, err := stream.NewWorker(tc.opts); err == nil {
			t.Errorf("%s: NewWorker accepted the options", tc.name)
		}
	}
	w := must(stream.NewWorker(stream.WorkerOptions{Client: rdb, Stream: "s", Group: "g", Handler: h}))(t)
	if w.Consumer() == "" {
		t.Error("no default consumer name")
	}
}
