package stream

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/linkmesh/linkmesh/pkg/logging"
	"github.com/redis/go-redis/v9"
)

// WorkerOptions configure a Worker. Zero values take the defaults given with each field.
type WorkerOptions struct {
	Client redis.UniversalClient
	Stream string
	Group  string
	// Consumer names the worker within Group; empty takes DefaultConsumer(). A worker
	// started again under the name of a stopped one first handles what that one left
	// pending.
	Consumer string
	Handler  Handler
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	// BatchSize is the most entries a handler gets at once (default 100).
	BatchSize int64
	// Block is how long a read waits for new entries (default 2s). Redis cannot be
	// interrupted mid-read, so Run may take this long to return once ctx ends.
	Block time.Duration
	// ClaimMinIdle is how long an entry must sit unacknowledged before the worker takes it
	// from the consumer holding it, presumed dead (default 1m). It must exceed the slowest
	// handler call, or a live consumer's entries are handled twice.
	ClaimMinIdle time.Duration
	// ClaimInterval is how often the worker looks for such entries (default 30s).
	ClaimInterval time.Duration
	// MaxDeliveries is how often an entry may be delivered before the worker stops
	// retrying it and moves it to DeadStream(Stream) (default 10). Counts cannot tell a
	// poison entry from a handler whose database is down: a handler failing throughout an
	// outage sets aside one entry per MaxDeliveries retries (about half a minute with the
	// defaults), kept there for replay.
	MaxDeliveries int64
	// DeadMaxLen caps the dead-letter stream, approximately (default 10000).
	DeadMaxLen int64
	// TrimInterval is how often the worker trims the entries every group of the stream has
	// acknowledged (default 1m; negative never trims).
	TrimInterval time.Duration
	// ForgetIdle is how long a consumer of Group may stay silent with nothing pending
	// before it is deleted from the group (default 24h; negative keeps them all). Default
	// names are unique per process, so without this every restart leaves one behind.
	ForgetIdle time.Duration
	// Backoff and MaxBackoff bound the wait between retries after a failure (defaults
	// 100ms and 10s).
	Backoff, MaxBackoff time.Duration
	// LogInterval is the least time between two logged failures (default 30s); the lines
	// held back in between are counted in the next one.
	LogInterval time.Duration
}

// Worker consumes a stream in a consumer group; see Run.
type Worker struct {
	opts WorkerOptions
	log  *slog.Logger
	// fails and recoveries space out the log lines of a worker going back and forth.
	fails, recoveries *logging.Limiter

	handled, acked, reclaimed, dead, failures atomic.Int64
}

// Stats are a worker's running totals.
type Stats struct {
	// Handled counts the entries a handler returned nil for.
	Handled int64
	// Acked counts the entries acknowledged, dead-lettered and deleted ones included.
	Acked int64
	// Reclaimed counts the entries taken over from idle consumers.
	Reclaimed int64
	// DeadLettered counts the entries moved to the dead-letter stream.
	DeadLettered int64
	// Failures counts the handler calls that returned an error.
	Failures int64
}

// NewWorker checks opts and fills in the defaults.
func NewWorker(opts WorkerOptions) (*Worker, error) {
	switch {
	case opts.Client == nil:
		return nil, errors.New("new stream worker: no redis client")
	case opts.Stream == "" || opts.Group == "":
		return nil, errors.New("new stream worker: stream and group must be named")
	case opts.Handler == nil:
		return nil, errors.New("new stream worker: no handler")
	case opts.BatchSize < 0 || opts.MaxDeliveries < 0 || opts.DeadMaxLen < 0:
		return nil, errors.New("new stream worker: negative batch size, max deliveries or dead-letter length")
	case min(opts.Block, opts.ClaimMinIdle, opts.ClaimInterval, opts.Backoff, opts.MaxBackoff, opts.LogInterval) < 0:
		return nil, errors.New("new stream worker: negative block, claim, backoff or log duration")
	}
	orDefault(&opts.Consumer, DefaultConsumer())
	orDefault(&opts.BatchSize, 100)
	orDefault(&opts.Block, 2*time.Second)
	orDefault(&opts.ClaimMinIdle, time.Minute)
	orDefault(&opts.ClaimInterval, 30*time.Second)
	orDefault(&opts.MaxDeliveries, 10)
	orDefault(&opts.DeadMaxLen, 10000)
	orDefault(&opts.TrimInterval, time.Minute)
	orDefault(&opts.ForgetIdle, 24*time.Hour)
	orDefault(&opts.Backoff, 100*time.Millisecond)
	orDefault(&opts.MaxBackoff, 10*time.Second)
	orDefault(&opts.LogInterval, 30*time.Second)
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("stream", opts.Stream, "group", opts.Group, "consumer", opts.Consumer)
	return &Worker{opts: opts, log: log, fails: &logging.Limiter{Every: opts.LogInterval},
		recoveries: &logging.Limiter{Every: opts.LogInterval}}, nil
}

func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Consumer is the worker's name within its group.
func (w *Worker) Consumer() string { return w.opts.Consumer }

// Stats returns the worker's totals so far.
func (w *Worker) Stats() Stats {
	return Stats{Handled: w.handled.Load(), Acked: w.acked.Load(), Reclaimed: w.reclaimed.Load(),
		DeadLettered: w.dead.Load(), Failures: w.failures.Load()}
}

// position is where the worker's loop stands between steps.
type position struct {
	// needGroup asks for the group to be created (again) before the next read.
	needGroup bool
	// backlog, when set, is the id after which the worker re-reads its own pending
	// entries, instead of reading new ones.
	backlog string
	// isolate re-reads the backlog one entry at a time, so that after a failed batch a
	// single poison entry reaches MaxDeliveries alone instead of taking its batch with it.
	isolate             bool
	nextClaim, nextTrim time.Time
}

// Run consumes the stream until ctx ends. It creates the group if missing, handles its own
// pending entries first, then new ones, and periodically reclaims idle consumers' entries
// and trims the stream. Every failure, of Redis or of the handler, is retried after a
// backoff, the group recreated if it vanished, so Run survives a Redis restart. The
// handler is never called concurrently by one worker.
func (w *Worker) Run(ctx context.Context) {
	w.log.InfoContext(ctx, "stream worker started")
	defer w.log.InfoContext(ctx, "stream worker stopped")
	now := time.Now()
	pos := position{needGroup: true, nextClaim: now, nextTrim: now.Add(w.opts.TrimInterval)}
	bo := backoff{min: w.opts.Backoff, max: w.opts.MaxBackoff}
	for ctx.Err() == nil {
		err := w.step(ctx, &pos)
		if err == nil {
			if bo.reset() {
				w.recovered(ctx)
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		// Whatever failed, what was read stays pending and is read again from the backlog; a
		// Redis failure may also have cost the group.
		var he handlerError
		handlerFailed := errors.As(err, &he)
		pos.backlog = "0"
		pos.isolate = pos.isolate || handlerFailed
		pos.needGroup = pos.needGroup || !handlerFailed
		w.warn(ctx, "stream worker failed", err)
		sleep(ctx, bo.next())
	}
}

// step does the next thing due: create the group, trim, reclaim, or read and handle.
func (w *Worker) step(ctx context.Context, pos *position) error {
	if pos.needGroup {
		if err := w.createGroup(ctx); err != nil {
			return err
		}
		pos.needGroup, pos.backlog = false, "0"
	}
	now := time.Now()
	if w.opts.TrimInterval > 0 && !now.Before(pos.nextTrim) {
		pos.nextTrim = now.Add(w.opts.TrimInterval)
		if _, err := TrimAcknowledged(ctx, w.opts.Client, w.opts.Stream); err != nil {
			w.warn(ctx, "stream trim failed", err)
		}
	}
	// While working off its own backlog the worker leaves others' entries alone: after a
	// failure it would otherwise claim its own backlog back and retry it all at once
	// rather than in turn.
	if pos.backlog == "" && !now.Before(pos.nextClaim) {
		pos.nextClaim = now.Add(w.opts.ClaimInterval)
		if err := w.reclaim(ctx); err != nil {
			return err
		}
	}
	return w.read(ctx, pos)
}

// warn logs err, at most once per LogInterval. Failures once ctx has ended are those of
// stopping, not worth a line.
func (w *Worker) warn(ctx context.Context, msg string, err error) {
	if ctx.Err() != nil {
		return
	}
	if ok, suppressed := w.fails.Allow(time.Now()); ok {
		w.log.WarnContext(ctx, msg, "err", err, "suppressed", suppressed)
	}
}

func (w *Worker) recovered(ctx context.Context) {
	if ok, _ := w.recoveries.Allow(time.Now()); ok {
		w.log.InfoContext(ctx, "stream worker recovered")
	}
}
