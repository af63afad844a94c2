package clicks

import (
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
	queue    chan Visit
	enricher *Enricher
	producer *stream.Producer
	log      *slog.Logger

	accepted, dropped, robots atomic.Int64

	logMu      sync.Mutex
	lastLog    time.Time
	unreported int64
}

// logEvery is the least time between two log lines about dropped visits.
const logEvery = 10 * time.Second

// NewRecorder returns a recorder holding at most queueSize visits not yet enriched.
func NewRecorder(queueSize int, enricher *Enricher, producer *stream.Producer, log *slog.Logger) *Recorder {
	return &Recorder{queue: make(chan Visit, queueSize), enricher: enricher, producer: producer, log: log}
}

// Record queues v. It never blocks; a full queue drops v and counts it.
func (r *Recorder) Record(v Visit) {
	select {
	case r.queue <- v:
		r.accepted.Add(1)
	default:
		r.dropped.Add(1)
		r.noteDrop()
	}
}

func (r *Recorder) noteDrop() {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	r.unreported++
	if now := time.Now(); now.Sub(r.lastLog) >= logEvery {
		r.log.Warn("click queue full; visits dropped", "dropped", r.unreported, "dropped_total", r.dropped.Load())
		r.lastLog, r.unreported = now, 0
	}
}

// Accepted, Dropped and Robots count visits taken, visits refused by a full queue, and
// visits that turned out to be crawlers.
func (r *Recorder) Accepted() int64 { return r.accepted.Load() }
func (r *Recorder) Dropped() int64  { return r.dropped.Load() }
func (r *Recorder) Robots() int64   { return r.robots.Load() }

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
	for {
		select {
		case v := <-r.queue:
			r.handle(v)
		case <-ctx.Done():
			for {
				select {
				case v := <-r.queue:
					r.handle(v)
				default:
					stopProducer()
					<-done
					return
				}
			}
		}
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
