// Package pipeline runs the analytics service's work on the clicks stream: the consumer that
// stores each batch of clicks and adds it to the rollups, and the recovery of batches a
// consumer left unfinished.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// Group is the consumer group of the analytics service on the clicks stream.
const Group = "analytics"

// Consumer timing.
const (
	// FlushInterval is the least time between the starts of two batches of one consumer:
	// a click waits at most this long before it is stored and counted, and a consumer under
	// load takes what arrived meanwhile as one batch, which bounds the batches each hot rollup
	// takes (see the store's guard window).
	FlushInterval = 250 * time.Millisecond
	// BatchSize is the most clicks a batch holds: EntriesPerRead entries of up to
	// analytics.MaxPerEntry clicks each.
	BatchSize = 5000
	// EntriesPerRead is how many stream entries one batch reads. Gateways pack their clicks
	// (analytics.MaxPerEntry at most to an entry), so a batch of entries holds up to
	// BatchSize clicks; entries of one click each (as earlier gateways wrote) make smaller
	// batches.
	EntriesPerRead = BatchSize / analytics.MaxPerEntry
	// SealAge is the age after which any consumer may apply a batch another one began: its
	// Insert, bounded by batchTimeout (which the driver passes on to the server as
	// maxTimeMS), is over by then. It equals the worker's ClaimMinIdle, so a dead consumer's
	// batches are sealed by the time its stream entries are claimed.
	SealAge = 30 * time.Second
	// RecoverInterval is how often a consumer looks for batches left pending longer than
	// SealAge, and for purges to settle.
	RecoverInterval = 10 * time.Second
	// batchTimeout bounds each store call of a batch.
	batchTimeout = 10 * time.Second
)

// Step names a point between two steps of a batch, for Consumer.Hook.
type Step string

// Steps of a batch, in order.
const (
	Inserted Step = "inserted" // its clicks are stored, pending
	Found    Step = "found"    // the batches pending among its clicks stored before are known
	Applied  Step = "applied"  // one pending batch is in the rollups
	Finished Step = "finished" // that batch's clicks are no longer pending
)

// Consumer stores and counts clicks, exactly once (see the store's batch.go).
type Consumer struct {
	Store  *store.Store
	Redis  redis.UniversalClient
	Logger *slog.Logger
	Now    func() time.Time
	// SealAge and FlushInterval default to the constants of the same names.
	SealAge, FlushInterval time.Duration
	// Hook, when set, is called between the steps of a batch; an error fails the batch
	// there, as a crash would (tests).
	Hook func(Step) error
	// ClickBudget is how many clicks of one client on one link count per BudgetWindow (see
	// admitClicks); 0 counts them all. Uncounted, when set, counts the clicks beyond it.
	ClickBudget  int
	BudgetWindow time.Duration
	Uncounted    prometheus.Counter

	once   sync.Once
	known  *decisions
	mu     sync.Mutex
	sealed map[bson.ObjectID]bool // batches this consumer inserted whole
	last   time.Time
	// unpaced counts the single-entry calls still to come unpaced after a failed one: the
	// stream worker retries a failed batch's entries one at a time, and pacing each would
	// hold a backlog of EntriesPerRead entries for minutes. Most find their clicks stored and
	// counted already; the rest are at most one failed batch's worth of new batches.
	unpaced int
}

func (c *Consumer) init() {
	c.once.Do(func() {
		c.known = &decisions{}
		c.sealed = map[bson.ObjectID]bool{}
		if c.SealAge == 0 {
			c.SealAge = SealAge
		}
		if c.FlushInterval == 0 {
			c.FlushInterval = FlushInterval
		}
	})
}

func (c *Consumer) hook(s Step) error {
	if c.Hook == nil {
		return nil
	}
	return c.Hook(s)
}

// Handle stores and counts a batch of click entries; the worker acknowledges them only once
// it returns nil, which is once every click among them is counted or left to a batch that is
// still pending and will be. An entry that is no click (a foreign or damaged entry) is
// logged and skipped: retrying cannot fix it. A click of a purged link is dropped.
func (c *Consumer) Handle(ctx context.Context, msgs []stream.Message) (err error) {
	c.init()
	c.mu.Lock()
	retrying := len(msgs) == 1 && c.unpaced > 0
	if retrying {
		c.unpaced--
	} else {
		c.unpaced = 0
	}
	c.mu.Unlock()
	defer func() {
		if err != nil {
			c.mu.Lock()
			c.unpaced = EntriesPerRead
			c.mu.Unlock()
		}
	}()
	if !retrying {
		c.pace(ctx)
	}
	clicks := make([]analytics.Click, 0, len(msgs))
	links := map[string]bool{}
	for _, m := range msgs {
		cls, err := analytics.ClicksFromValues(m.Values)
		if err != nil {
			c.Logger.WarnContext(ctx, "skipping what is no click in an entry", "id", m.ID, "clicks", len(cls), "err", err)
		}
		for _, cl := range cls {
			clicks = append(clicks, cl)
			links[cl.LinkID] = true
		}
	}
	if len(clicks) == 0 {
		return nil
	}
	if err := admitValues(ctx, c.Redis, c.known, clicks); err != nil {
		return err
	}
	if c.ClickBudget > 0 {
		var over int
		if clicks, over, err = admitClicks(ctx, c.Redis, clicks, c.ClickBudget, c.BudgetWindow); err != nil {
			return err
		}
		if over > 0 && c.Uncounted != nil {
			c.Uncounted.Add(float64(over))
		}
		if len(clicks) == 0 {
			return nil
		}
	}
	// A batch begun is carried through even when ctx ends (a shutdown), within batchTimeout:
	// one left applied but not finished would be applied again much later by the recovery.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), batchTimeout)
	defer cancel()
	gone, err := c.Store.Purged(bctx, links)
	if err != nil {
		return err
	}
	kept := clicks[:0]
	for _, cl := range clicks {
		if !gone[cl.LinkID] {
			kept = append(kept, cl)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	batch := bson.NewObjectID()
	before, err := c.Store.Insert(bctx, kept, batch, c.Now())
	if err != nil {
		return err
	}
	c.seal(batch)
	if err := c.hook(Inserted); err != nil {
		return err
	}
	batches := []bson.ObjectID{batch}
	if len(before) > 0 {
		others, err := c.Store.PendingBatches(bctx, before)
		if err != nil {
			return err
		}
		for _, b := range others {
			if b != batch {
				batches = append(batches, b)
			}
		}
		if err := c.hook(Found); err != nil {
			return err
		}
	}
	for _, b := range batches {
		if !c.mayApply(b) {
			// Begun by another consumer moments ago: that one finishes it, or, should it
			// die, whoever claims its stream entries or the recovery pass.
			continue
		}
		if err := c.finish(bctx, b); err != nil {
			return err
		}
	}
	return nil
}

// finish applies batch and marks it applied.
func (c *Consumer) finish(ctx context.Context, batch bson.ObjectID) error {
	if err := c.Store.Apply(ctx, batch); err != nil {
		return err
	}
	if err := c.hook(Applied); err != nil {
		return err
	}
	if err := c.Store.Finish(ctx, batch); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.sealed, batch)
	c.mu.Unlock()
	return c.hook(Finished)
}

// pace waits until FlushInterval after the previous batch began.
func (c *Consumer) pace(ctx context.Context) {
	c.mu.Lock()
	wait := time.Until(c.last.Add(c.FlushInterval))
	c.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	c.mu.Lock()
	c.last = time.Now()
	c.mu.Unlock()
}

// seal remembers that batch was inserted whole; a batch this consumer began and failed to
// finish is applied by its next attempt at once.
func (c *Consumer) seal(batch bson.ObjectID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sealed) >= 10_000 {
		clear(c.sealed)
	}
	c.sealed[batch] = true
}

// mayApply tells whether batch's clicks are all stored: it is this consumer's, or older
// than SealAge.
func (c *Consumer) mayApply(batch bson.ObjectID) bool {
	c.mu.Lock()
	mine := c.sealed[batch]
	c.mu.Unlock()
	return mine || c.Now().Sub(batch.Timestamp()) >= c.SealAge
}

// Recover applies the batches left pending longer than SealAge (their consumer failed or
// died, and their stream entries may have been dead-lettered), and settles due purges.
func (c *Consumer) Recover(ctx context.Context) error {
	c.init()
	ctx, cancel := context.WithTimeout(ctx, RecoverInterval)
	defer cancel()
	stale, err := c.Store.StaleBatches(ctx, c.Now().Add(-c.SealAge))
	if err != nil {
		return err
	}
	// One batch that fails (its store call, or a document it cannot write) does not hold up
	// the others or the purges.
	var failed []error
	for _, b := range stale {
		if err := c.finish(ctx, b); err != nil {
			failed = append(failed, fmt.Errorf("batch %s: %w", b.Hex(), err))
		}
	}
	if n := len(stale) - len(failed); n > 0 {
		c.Logger.InfoContext(ctx, "pending batches recovered", "batches", n)
	}
	return errors.Join(append(failed, c.Store.Settle(ctx, c.Now()))...)
}

// RunRecovery recovers at start and every RecoverInterval until ctx ends.
func (c *Consumer) RunRecovery(ctx context.Context) {
	t := time.NewTicker(RecoverInterval)
	defer t.Stop()
	for {
		if err := c.Recover(ctx); err != nil && ctx.Err() == nil {
			c.Logger.WarnContext(ctx, "recovering pending batches failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
