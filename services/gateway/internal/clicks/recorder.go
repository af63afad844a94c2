package clicks

import (
	"github.com/linkmesh/linkmesh/pkg/logging"

	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkmesh/linkmesh/pkg/stream"
)

// Recorder takes visits from the redirect without ever making it wait, and turns them into
// clicks on the stream in the background.
//
// A visit passes two bounded queues: the recorder's own (raw visits, held only in this
// process's memory, since they carry the client address) and the stream producer's
// (finished clicks waiting for Redis). A visit either becomes a click on the stream, is
// not a click (a crawler), or is dropped and counted — by Record when its queue is full,
// by the producer when Redis stays away — and every drop is logged, at most once per
// logEvery with a count of the rest.
type Recorder struct {
	// pending is the recorder's queue: the redirect appends under mu, and Run takes the
	// whole slice every handOff, so a visit costs the redirect an append, never a goroutine
	// wake-up.
	mu       sync.Mutex
	pending  []Visit
	spare    []Visit
	capacity int
	accepted int64

	enricher *Enricher
	producer *stream.Producer
	log      *slog.Logger

	dropped, robots atomic.Int64
	drops           logging.Limiter
}

// logEvery is the least time between two log lines about dropped visits.
const logEvery = 10 * time.Second

// handOff is how often Run takes the queued visits.
const handOff = 10 * time.Millisecond

// NewRecorder returns a recorder holding at most queueSize visits not yet enriched.
func NewRecorder(queueSize int, enricher *Enricher, producer *stream.Producer, log *slog.Logger) *Recorder {
	return &Recorder{capacity: queueSize, enricher: enricher, producer: producer, log: log, drops: logging.Limiter{Every: logEvery}}
}

// Record queues v. It never blocks on anything but a short append; a full queue drops v
// and counts it.
func (r *Recorder) Record(v Visit) {
	r.mu.Lock()
	if len(r.pending) < r.capacity {
		r.pending = append(r.pending, v)
		r.accepted++
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	n := r.dropped.Add(1)
	if ok, suppressed := r.drops.Allow(time.Now()); ok {
		r.log.Warn("click queue full; visits dropped", "dropped_total", n, "suppressed", suppressed)
	}
}

// take swaps out the queued visits. The slice handed out becomes the queue again at the
// next take, so Run must be done with it by then.
func (r *Recorder) take() []Visit {
	r.mu.Lock()
	out := r.pending
	r.pending, r.spare = r.spare[:0], out
	r.mu.Unlock()
	return out
}

// Accepted, Dropped and Robots count visits taken, visits refused by a full queue, and
// visits that turned out to be crawlers.
func (r *Recorder) Accepted() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted
}
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// Lost counts the clicks the producer could not write: refused by its full queue, or given
// up at shutdown with Redis away.
func (r *Recorder) Lost() int64 { return r.producer.Dropped() + r.producer.Failed() }

// Published counts the clicks written to the stream.
func (r *Recorder) Published() int64 { return r.producer.Sent() }

// Queue reports the visits and clicks waiting in the gateway (the recorder's queue and the
// producer's) and how many both may hold.
func (r *Recorder) Queue() (depth, capacity int64) {
	r.mu.Lock()
	n := len(r.pending)
	r.mu.Unlock()
	return int64(n) + r.producer.Pending(), int64(r.capacity) + r.producer.Capacity()
}
func (r *Recorder) Robots() int64 { return r.robots.Load() }

// Run enriches queued visits and hands the clicks to the producer, which it runs too,
// until ctx ends. Then it enriches what is still queued and lets the producer flush it all
// before returning: a graceful shutdown loses no click Record took.
func (r *Recorder) Run(ctx context.Context) {
	pctx, stopProducer := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.producer.Run(pctx)
	}()
	t := time.NewTicker(handOff)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.handleAll()
		case <-ctx.Done():
			r.handleAll()
			stopProducer()
			<-done
			return
		}
	}
}

func (r *Recorder) handleAll() {
	batch := r.take()
	for i := range batch {
		r.handle(batch[i])
		batch[i] = Visit{} // drop the address from memory now
	}
}

func (r *Recorder) handle(v Visit) {
	c, ok := r.enricher.Enrich(v)
	if !ok {
		r.robots.Add(1)
		return
	}
	// The visit's strings were copied out of the request when it was recorded.
	r.producer.EnqueueOwned(c.Fields())
}
