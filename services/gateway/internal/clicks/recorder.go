package clicks

import (
	"github.com/linkmesh/linkmesh/pkg/logging"

	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/stream"
)

// Recorder takes visits from the redirect without ever making it wait, and turns them into
// clicks on the stream in the background.
//
// A visit waits in the recorder's spool (raw, with the client address; see spool) from
// the moment the redirect answers until its click is on the stream: Run takes visits from
// the spool only as fast as the stream producer has room, so the producer never drops, and
// lets a visit go only once the producer has written it. A visit either becomes a click on
// the stream, is not a click (a crawler), or is dropped and counted by Record when the
// spool is full — and every drop is logged, at most once per logEvery with a count of the
// rest.
type Recorder struct {
	// mu guards the spool's head and tail, held and buf: Record appends a visit under it,
	// so a visit costs the redirect a copy of its bytes, never a goroutine wake-up.
	mu       sync.Mutex
	spool    *spool
	held     int // visits in the spool
	drain    time.Duration
	stopped  bool // Run has returned
	capacity int
	accepted int64
	buf      []byte

	// marks are Run's own: where the spool's visits end as each batch went to the
	// producer, and how many entries the producer had then accepted.
	marks []mark
	// id is Run's room for a visit's event ID; pack holds the values of packed clicks, one
	// line each, of the stream entry in the making, begun at packSince; sinceVisits and
	// sinceClicks count what was taken since the last mark.
	id                       [2 * idSize]byte
	pack                     []byte
	packed                   int
	packSince                time.Time
	sinceVisits, sinceClicks int

	enricher *Enricher
	producer *stream.Producer
	log      *slog.Logger

	dropped, robots atomic.Int64
	published       atomic.Int64 // clicks on the stream
	drops           logging.Limiter
}

// mark is the spool position up to which visits may go once the producer has settled
// accepted entries, and how many visits that frees.
type mark struct {
	end      uint64
	accepted int64
	visits   int
	clicks   int // of the visits, those that were clicks
}

// logEvery is the least time between two log lines about dropped visits.
const logEvery = 10 * time.Second

// handOff is how often Run takes the queued visits, and stepMax the most it takes at a
// time: a step is then a fraction of a millisecond of work, after which Run waits for the
// next tick. It must not run longer: while any goroutine is runnable Go's scheduler does not
// poll the network, so with GOMAXPROCS=1 a long step holds back every redirect that
// arrived meanwhile (runtime.Gosched does not help: it only lets runnable goroutines in).
// At most stepMax visits a tick is 256,000 a second, beyond what one core can answer.
const (
	handOff = time.Millisecond
	stepMax = 256
)

// packWait is the longest a pack stays open for more clicks before it goes to the
// producer. Under load a pack fills (analytics.MaxPerEntry) well before, so the analytics
// service reads full entries; a click at light load waits this long more.
const packWait = 5 * time.Millisecond

// drainTimeout bounds how long a stopping Run hands visits to the producer.
const drainTimeout = 5 * time.Second

// RecorderOptions configure NewRecorder.
type RecorderOptions struct {
	// QueueSize is the most visits the spool holds.
	QueueSize int
	// SpoolPath is the spool's file, best on a memory-backed volume; empty keeps the spool
	// in process memory, which a crash loses.
	SpoolPath string
	// SpoolSize is the spool's size in bytes (at least 1 MiB).
	SpoolSize int
	Enricher  *Enricher
	Producer  *stream.Producer
	Logger    *slog.Logger
}

// NewRecorder opens the spool and takes over the visits an earlier process left in it.
func NewRecorder(opts RecorderOptions) (*Recorder, error) {
	sp, carried, lost, err := openSpool(opts.SpoolPath, opts.SpoolSize)
	if err != nil {
		return nil, err
	}
	r := &Recorder{spool: sp, held: carried, capacity: opts.QueueSize, enricher: opts.Enricher, producer: opts.Producer,
		log: opts.Logger, drops: logging.Limiter{Every: logEvery}, buf: make([]byte, 0, maxRecord), drain: drainTimeout}
	if err := sp.pin(); err != nil {
		r.log.Info("click spool: its pages cannot be locked in memory (it needs CAP_IPC_LOCK or a memlock limit of its size); the kernel may reclaim or swap them",
			"path", opts.SpoolPath, "bytes", headerSize+opts.SpoolSize, "err", err)
	}
	if opts.SpoolPath != "" && !inMemory(opts.SpoolPath) {
		r.log.Warn("click spool is not on a memory-backed file system (tmpfs): the client addresses it holds may be written to disk", "path", opts.SpoolPath)
	}
	if carried > 0 || lost > 0 {
		r.log.Info("click spool: visits left by the last run are sent now", "visits", carried, "unreadable_or_beyond_size", lost)
	}
	if lost > 0 {
		r.dropped.Add(int64(lost))
	}
	return r, nil
}

// Record spools v. It never blocks on anything but a short copy; a full spool drops v and
// counts it. v's strings are copied, so they may alias buffers the caller reuses. A visit
// without a User-Agent is no click (see NoClient) and is counted with the robots at once.
func (r *Recorder) Record(v Visit) {
	if NoClient(v.UserAgent) {
		r.robots.Add(1) // no click: not worth a place in the spool
		return
	}
	if r.spoolVisit(&v) {
		return
	}
	n := r.dropped.Add(1)
	if ok, suppressed := r.drops.Allow(time.Now()); ok {
		r.log.Warn("click spool full; visits dropped", "dropped_total", n, "suppressed", suppressed)
	}
}

// spoolVisit appends v to the spool, or reports it full.
func (r *Recorder) spoolVisit(v *Visit) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held >= r.capacity || (r.stopped && r.spool.file == nil) {
		return false
	}
	r.buf = r.spool.encode(r.buf[:0], v)
	ok := r.spool.append(r.buf)
	clear(r.buf) // it holds the client's address
	if !ok {
		return false
	}
	r.held++
	r.accepted++
	return true
}

// Accepted, Dropped and Robots count visits taken; visits lost: refused by a full spool,
// unreadable in the spool, or left in a spool in memory at shutdown (the producer writes
// only what the spool still holds, so whatever it fails to write is among these); and
// visits that turned out to be crawlers.
func (r *Recorder) Accepted() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted
}
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// Published counts the clicks written to the stream.
func (r *Recorder) Published() int64 { return r.published.Load() }

// Queue reports the visits waiting in the gateway's spool, not yet on the stream, and how
// many it may hold.
func (r *Recorder) Queue() (depth, capacity int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(r.held), int64(r.capacity)
}
func (r *Recorder) Robots() int64 { return r.robots.Load() }

// SpoolBytes reports the bytes of the spool the waiting visits take, and its size: long
// User-Agents and Referers may fill it before LINKMESH_CLICK_QUEUE visits do.
func (r *Recorder) SpoolBytes() (used, size int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(r.spool.head - r.spool.tail), int64(r.spool.size)
}

// Run enriches spooled visits and hands the clicks to the producer, which it runs too,
// until ctx ends. Then, for at most drainTimeout, it hands over what is still spooled and
// lets the producer flush it before returning: a graceful shutdown loses no click Record
// took, and what Redis did not take stays in a spool file for the next start.
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
			r.step()
		case <-ctx.Done():
			deadline := time.Now().Add(r.drain)
			for r.step() > 0 && time.Now().Before(deadline) {
				time.Sleep(handOff)
			}
			for !r.flushPack() && time.Now().Before(deadline) {
				time.Sleep(handOff)
			}
			stopProducer()
			<-done
			r.settle()
			r.stop()
			return
		}
	}
}

// stop ends the recording: visits still held are lost with a spool in memory, and counted
// so, or wait in the spool file for the next start; from now on Record drops (in memory)
// or keeps filling the file.
func (r *Recorder) stop() {
	r.mu.Lock()
	r.stopped = true
	left := r.held
	r.mu.Unlock()
	switch {
	case left == 0:
	case r.spool.file == nil:
		r.dropped.Add(int64(left))
		r.log.Error("click spool: visits not written to the stream before shutdown are lost", "visits", left)
	default:
		r.log.Warn("click spool: visits not written to the stream before shutdown wait in the spool file for the next start", "visits", left)
	}
}

// step lets go of the visits the stream has, then hands the producer as many spooled
// visits as it has room for (at most stepMax), and returns how many are left untaken.
func (r *Recorder) step() int {
	r.settle()
	room := r.producer.Capacity() - r.producer.Pending()
	r.mu.Lock()
	head, appended := r.spool.head, r.spool.appended
	r.mu.Unlock()
	taken := 0
	for int64(taken) < min(room*analytics.MaxPerEntry, stepMax) && r.packed < analytics.MaxPerEntry {
		rec, ok, bad := r.spool.next(head)
		if bad {
			// keep checked the file at start, so only memory gone bad could get here;
			// what follows cannot be read, and is counted dropped and let go.
			left := int(appended - r.spool.taken)
			r.dropped.Add(int64(left))
			r.log.Error("click spool: unreadable bytes; the visits after them are dropped", "visits", left)
			r.spool.read, r.spool.taken = head, appended
			taken += left
			r.sinceVisits += left
			break
		}
		if !ok {
			break
		}
		taken++
		r.sinceVisits++
		v, ok := view(rec, &r.id)
		if !ok {
			r.dropped.Add(1)
			continue
		}
		r.handle(v)
	}
	switch {
	case r.packed == 0:
		r.markTaken()
	case r.packed == analytics.MaxPerEntry || time.Since(r.packSince) >= packWait:
		r.flushPack()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.spool.appended - r.spool.taken)
}

// settle lets go of the visits whose clicks the producer has written (or that were no
// click): their bytes are zeroed and their room freed.
func (r *Recorder) settle() {
	settled := r.producer.Settled()
	end, visits, clicks, i := r.spool.tail, 0, 0, 0
	for ; i < len(r.marks) && r.marks[i].accepted <= settled; i++ {
		end, visits, clicks = r.marks[i].end, visits+r.marks[i].visits, clicks+r.marks[i].clicks
	}
	if i == 0 {
		return
	}
	r.published.Add(int64(clicks))
	r.marks = append(r.marks[:0], r.marks[i:]...)
	// The file's tail moves first: a crash after it leaves no settled visit to send again,
	// and a crash before it only settled visits that the event IDs keep from counting twice.
	// The writers' tail moves last, once the bytes are zeroed, as they may then reuse them.
	r.spool.store(offTail, end)
	r.spool.zeroRange(r.spool.tail, end)
	r.mu.Lock()
	r.spool.tail = end
	r.held -= visits
	r.mu.Unlock()
}

// handle turns v, whose strings are the spool's bytes, into a click in the pack (the
// stream entry in the making), unless it is no click.
func (r *Recorder) handle(v Visit) {
	n := len(r.pack)
	if r.packed > 0 {
		r.pack = append(r.pack, '\n')
	}
	var ok bool
	if r.pack, ok = r.enricher.AppendClick(r.pack, v); !ok {
		r.pack = r.pack[:n]
		r.robots.Add(1)
		return
	}
	if r.packed == 0 {
		r.packSince = time.Now()
	}
	r.sinceClicks++
	if r.packed++; r.packed == analytics.MaxPerEntry {
		r.flushPack()
	}
}

// flushPack hands the pack to the producer as one stream entry (its value is the one
// string the clicks in it allocate), then marks the visits taken so far. With the
// producer's queue full (or the producer stopped) the pack stays, and so do its visits in
// the spool: it reports false, and a later call hands it over.
func (r *Recorder) flushPack() bool {
	if r.packed > 0 {
		if r.producer.Pending() >= r.producer.Capacity() || !r.producer.EnqueueField(analytics.CompactField, string(r.pack)) {
			return false
		}
		r.pack, r.packed = r.pack[:0], 0
	}
	r.markTaken()
	return true
}

// markTaken marks the visits taken since the last mark, none of them in an open pack, to be
// let go once the producer has written what it has accepted by now.
func (r *Recorder) markTaken() {
	if r.sinceVisits == 0 {
		return
	}
	r.marks = append(r.marks, mark{end: r.spool.read, accepted: r.producer.Accepted(), visits: r.sinceVisits, clicks: r.sinceClicks})
	r.sinceVisits, r.sinceClicks = 0, 0
}
