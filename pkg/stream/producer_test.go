package stream_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

func newProducer(t *testing.T, rdb redis.UniversalClient, opts stream.ProducerOptions) *stream.Producer {
	t.Helper()
	opts.Client, opts.Logger = rdb, logger(t)
	if opts.Backoff == 0 {
		opts.Backoff, opts.MaxBackoff = 10*time.Millisecond, 100*time.Millisecond
	}
	return must(stream.NewProducer(opts))(t)
}

func entry(i int) map[string]any { return map[string]any{"id": businessID(i)} }

func TestProducerDropsWhenFullAndFlushesWhenStopped(t *testing.T) {
	rdb, s := testenv.Redis(t), testenv.Name("stream")
	p := newProducer(t, rdb, stream.ProducerOptions{Stream: s, QueueSize: 10, FlushInterval: time.Hour})
	for i, want := range []bool{true, true, true, true, true, true, true, true, true, true, false, false} {
		if got := p.Enqueue(entry(i)); got != want {
			t.Fatalf("Enqueue #%d = %v, want %v with a queue of 10", i+1, got, want)
		}
	}
	if p.Dropped() != 2 || p.Pending() != 10 {
		t.Fatalf("dropped %d, pending %d; want 2 and 10", p.Dropped(), p.Pending())
	}
	// Stopped at once, Run must still write out the whole queue (the batch never filled and
	// the flush interval never came).
	run(t, p.Run)()
	if got := xlen(t, rdb, s); got != 10 || p.Sent() != 10 || p.Pending() != 0 || p.Failed() != 0 {
		t.Errorf("stream holds %d, sent %d, pending %d, failed %d; want all 10 accepted written", got, p.Sent(), p.Pending(), p.Failed())
	}
	if p.Accepted() != 10 || p.Settled() != 10 {
		t.Errorf("accepted %d, settled %d; want 10 and 10", p.Accepted(), p.Settled())
	}
	if p.Enqueue(entry(99)) || p.Dropped() != 3 {
		t.Errorf("after Run returned, Enqueue accepted or did not count the drop (dropped %d)", p.Dropped())
	}
}

func TestProducerWritesEverythingAcceptedUnderLoad(t *testing.T) {
	rdb, s := testenv.Redis(t), testenv.Name("stream")
	p := newProducer(t, rdb, stream.ProducerOptions{Stream: s, QueueSize: 100, BatchSize: 20, FlushInterval: 10 * time.Millisecond})
	stop := run(t, p.Run)
	var accepted atomic.Int64
	var wg sync.WaitGroup
	const writers, each = 4, 500
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				if p.Enqueue(entry(g*each + i)) {
					accepted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	stop()
	if got := xlen(t, rdb, s); got != accepted.Load() || p.Sent() != got || p.Dropped() != writers*each-got || p.Failed() != 0 {
		t.Errorf("accepted %d, stream holds %d, sent %d, dropped %d, failed %d; want every accepted entry written and the rest counted dropped",
			accepted.Load(), got, p.Sent(), p.Dropped(), p.Failed())
	}
}

func TestProducerKeepsItsBatchWhileRedisIsDown(t *testing.T) {
	const queue, batch = 5, 5
	rdb, s := testenv.Redis(t), testenv.Name("stream")
	behind, px := redisBehindProxy(t)
	px.setCut(true)
	p := newProducer(t, behind, stream.ProducerOptions{Stream: s, QueueSize: queue, BatchSize: batch, FlushInterval: time.Hour})
	run(t, p.Run)
	defer func() {
		if p.Settled() != p.Accepted() || p.Accepted() != queue+batch {
			t.Errorf("accepted %d, settled %d; want %d each once written", p.Accepted(), p.Settled(), queue+batch)
		}
	}()

	// Run holds one full batch while it retries, so the queue behind it fills; then Enqueue
	// drops. (Drops before Run took the first batch are counted too, just not needed here.)
	accepted := 0
	eventually(t, "the queue full behind a held batch", func() bool {
		if p.Enqueue(entry(accepted)) {
			accepted++
			return false
		}
		return accepted == queue+batch
	})
	px.setCut(false)
	eventually(t, "the held batch and the queue written", func() bool { return p.Sent() == queue+batch && p.Settled() == queue+batch })
	if got := xlen(t, rdb, s); got != queue+batch || p.Failed() != 0 || p.Dropped() == 0 {
		t.Errorf("stream holds %d, failed %d, dropped %d; want %d written and the drops counted", got, p.Failed(), p.Dropped(), queue+batch)
	}
}

func TestProducerCountsWhatItCouldNotWriteAtShutdown(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	p := newProducer(t, rdb, stream.ProducerOptions{Stream: "s", QueueSize: 3, DrainTimeout: 300 * time.Millisecond})
	for i := range 3 {
		p.Enqueue(entry(i))
	}
	stop := run(t, p.Run)
	time.Sleep(200 * time.Millisecond)
	stop()
	if p.Sent() != 0 || p.Failed() != 3 || p.Pending() != 0 || p.Accepted() != 3 || p.Settled() != 0 {
		t.Errorf("sent %d, failed %d, pending %d, accepted %d, settled %d; want the 3 accepted entries counted failed and none settled",
			p.Sent(), p.Failed(), p.Pending(), p.Accepted(), p.Settled())
	}
}

func TestNewProducerRefusesIncompleteOptions(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	for _, tc := range []struct {
		name string
		opts stream.ProducerOptions
	}{
		{"no client", stream.ProducerOptions{Stream: "s"}},
		{"no stream", stream.ProducerOptions{Client: rdb}},
		{"negative queue", stream.ProducerOptions{Client: rdb, Stream: "s", QueueSize: -1}},
		{"negative flush interval", stream.ProducerOptions{Client: rdb, Stream: "s", FlushInterval: -time.Second}},
	} {
		if _, err := stream.NewProducer(tc.opts); err == nil {
			t.Errorf("%s: NewProducer accepted the options", tc.name)
		}
	}
	p := must(stream.NewProducer(stream.ProducerOptions{Client: rdb, Stream: "s", Logger: logger(t)}))(t)
	if p.Enqueue(map[string]any{}) || p.Dropped() != 1 {
		t.Errorf("an empty entry was accepted or its drop not counted (dropped %d)", p.Dropped())
	}
}
