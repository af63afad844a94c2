// Package redirect serves GET /{code} from an in-process cache of resolved links, filled from
// the link service on a miss and invalidated by Redis pub/sub.
package redirect

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// Entry is what the cache keeps for a code; Found is false for an unknown code.
type Entry struct {
	Found bool
	link.Resolved
	// fetched is when the fill began; the entry is never served link.CacheTTL after it.
	fetched time.Time
	// refreshAt is when a hit starts refreshing the entry in the background, some time
	// between refreshFrom and refreshTo after fetched, spread so that codes filled together
	// do not all refresh together.
	refreshAt time.Time
	// stale is set once a fill of the expired entry found the link service unreachable: the
	// entry then answers, up to StaleFor past link.CacheTTL, while fills are retried in the
	// background.
	stale bool
}

// A hit on an entry older than its refresh point is answered from the entry while one fill
// replaces it in the background, so a code visited at least once in the refresh window
// never makes a visitor wait for its own refresh. An entry nobody visits in that window
// expires at link.CacheTTL and is filled on the next visit, as before.
const (
	refreshFrom = link.CacheTTL / 2
	refreshTo   = link.CacheTTL * 5 / 6
)

// StaleFor is how long past link.CacheTTL an entry still answers while the link service
// cannot be reached (its fills fail as unavailable or time out), so that a link service
// outage does not take every warm short link down with it. Invalidations still apply: a code
// the link service changed is dropped at once and never served stale. An entry's state at
// the outage (a link disabled meanwhile by a service that could not tell the gateway) is
// what visitors get, for at most this long.
const StaleFor = 15 * time.Minute

// Resolver asks the link service; *link.Client satisfies it.
type Resolver interface {
	Resolve(ctx context.Context, code string) (link.Resolved, error)
}

// LinkResolver asks the link service as an anonymous caller: a visitor of a short link needs
// no session.
type LinkResolver struct {
	Links *link.Client
	Keys  *identity.Keys
}

// Resolve implements Resolver.
func (r LinkResolver) Resolve(ctx context.Context, code string) (link.Resolved, error) {
	ctx, err := r.Keys.WithCaller(ctx, identity.Anonymous)
	if err != nil {
		return link.Resolved{}, err
	}
	return r.Links.Resolve(ctx, code)
}

// Cache is the gateway's cache of resolved links: bounded in size, no entry served after
// link.CacheTTL, one concurrent fill per code, hot entries refreshed ahead of their bound.
//
// Entries carry their own fetch time and are checked against the caller's clock instead of
// using an expiring LRU, because that reads the system clock on every hit, and the redirect
// path already has the request's start time for free.
type Cache struct {
	entries  *lru.Cache[string, *Entry]
	resolver Resolver
	fills    singleflight.Group

	// mu orders a fill's store against invalidations of the same code: a fill that was in
	// flight when its code was invalidated must not store its answer, which may predate the
	// change. Hits never take it.
	mu       sync.Mutex
	inflight map[string]*fill
	// refreshing counts the background refreshes in flight.
	refreshing atomic.Int32

	hits, staleHits, misses, stored atomic.Int64
}

// fill is one fill in flight; stale is set when its code is invalidated meanwhile.
type fill struct{ stale bool }

// NewCache returns a cache of at most size entries.
func NewCache(size int, resolver Resolver) *Cache {
	entries, err := lru.New[string, *Entry](size)
	if err != nil {
		panic(err) // only for size < 1, which configuration refuses
	}
	return &Cache{entries: entries, resolver: resolver, inflight: map[string]*fill{}}
}

// Lookup returns the entry for code as of now, asking the link service on a miss or when the
// entry is older than link.CacheTTL. code may alias a request buffer; it is copied before it
// is kept. The entry is shared and must not be changed: the cache replaces an entry whole,
// so a hit copies nothing.
func (c *Cache) Lookup(ctx context.Context, code string, now time.Time) (*Entry, error) {
	e, cached := c.entries.Get(code)
	if cached {
		age := now.Sub(e.fetched)
		if age < link.CacheTTL || (e.stale && age < link.CacheTTL+StaleFor) {
			if age < link.CacheTTL {
				c.hits.Add(1)
			} else {
				c.staleHits.Add(1)
			}
			if !now.Before(e.refreshAt) {
				c.refresh(ctx, code, e, now)
			}
			return e, nil
		}
	}
	c.misses.Add(1)
	code = strings.Clone(code)
	// The fill serves every waiter, so the first caller going away must not cancel it; it
	// keeps the caller's trace.
	fctx := context.WithoutCancel(ctx)
	v, err, _ := c.fills.Do(code, func() (any, error) { return c.fill(fctx, code, now) })
	if err != nil {
		if cached && unreachable(err) && now.Sub(e.fetched) < link.CacheTTL+StaleFor && c.markStale(code, e, now) {
			c.staleHits.Add(1)
			return e, nil
		}
		return nil, err
	}
	return v.(*Entry), nil
}

// unreachable tells a link service that cannot answer from one that answered.
func unreachable(err error) bool {
	return errs.IsKind(err, errs.KindUnavailable) || errors.Is(err, context.DeadlineExceeded)
}

// markStale lets the expired entry e of code answer while the link service is away, unless
// it was invalidated or replaced meanwhile; the next fill is tried refreshRetry later, in
// the background.
func (c *Cache) markStale(code string, e *Entry, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur, ok := c.entries.Peek(code)
	if !ok || !cur.fetched.Equal(e.fetched) {
		return false // invalidated or filled anew meanwhile
	}
	if cur.stale {
		return true // another visitor of the failed fill marked it
	}
	next := *cur
	next.stale, next.refreshAt = true, now.Add(refreshRetry)
	c.entries.Add(code, &next)
	return true
}

// refreshRetry is how long after starting a refresh the entry may start another, should
// the first fail.
const refreshRetry = 5 * time.Second

// refresh starts one background fill of code, whose entry e is due: the entry's refresh
// point moves on first, so the hits that follow while the fill runs start none.
func (c *Cache) refresh(ctx context.Context, code string, e *Entry, now time.Time) {
	// Codes that went quiet together come due together: the first hits after a lull would
	// start a fill each at once. A few run at a time; the rest stay due and start on a later
	// hit, unless the bound is near, when they start regardless. A hit that may not start one
	// returns without taking the lock.
	urgent := now.Sub(e.fetched) >= link.CacheTTL-refreshUrgent
	if !urgent && c.refreshing.Load() >= maxRefreshing {
		return
	}
	c.mu.Lock()
	cur, ok := c.entries.Peek(code)
	due := ok && cur == e && !now.Before(cur.refreshAt)
	if due {
		next := *cur
		next.refreshAt = now.Add(refreshRetry)
		c.entries.Add(code, &next)
		c.refreshing.Add(1)
	}
	c.mu.Unlock()
	if !due {
		return // another hit started it, or the entry changed meanwhile
	}
	code = strings.Clone(code)
	fctx := context.WithoutCancel(ctx)
	done := c.fills.DoChan(code, func() (any, error) { return c.fill(fctx, code, now) })
	go func() {
		<-done // also when the refresh joined a fill of code already in flight
		c.refreshing.Add(-1)
	}()
}

// maxRefreshing bounds the background refreshes in flight but those of entries within
// refreshUrgent of their bound (loosely: hits that pass the check together may each start
// one).
const (
	maxRefreshing = 8
	refreshUrgent = 3 * time.Second
)

// fill asks the link service about code and stores the answer unless code was invalidated
// meanwhile.
func (c *Cache) fill(ctx context.Context, code string, now time.Time) (*Entry, error) {
	f := &fill{}
	c.mu.Lock()
	c.inflight[code] = f
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.inflight[code] == f {
			delete(c.inflight, code)
		}
		c.mu.Unlock()
	}()
	r, err := c.resolver.Resolve(ctx, code)
	e := &Entry{}
	switch {
	case err == nil:
		e = &Entry{Found: true, Resolved: r}
	case errs.IsKind(err, errs.KindNotFound):
	default:
		return nil, err
	}
	e.fetched = now
	e.refreshAt = now.Add(refreshFrom + rand.N(refreshTo-refreshFrom))
	c.mu.Lock()
	if !f.stale {
		c.entries.Add(code, e)
		c.stored.Add(1)
	}
	c.mu.Unlock()
	return e, nil
}

// Forget drops code, so the next visit asks the link service again: a fill of code in
// flight will not store its answer, and new visits do not join it. Other codes' fills are
// untouched.
func (c *Cache) Forget(code string) {
	c.mu.Lock()
	if f := c.inflight[code]; f != nil {
		f.stale = true
		delete(c.inflight, code)
	}
	c.entries.Remove(code)
	c.mu.Unlock()
	c.fills.Forget(code)
}

// Len is the number of cached entries.
func (c *Cache) Len() int { return c.entries.Len() }

// Stats are the cache's running totals.
type Stats struct {
	// Hits are lookups answered from an entry, Misses lookups that waited for a fill (a
	// visitor joining another's fill included), Fills the answers of the link service
	// stored, refreshes included, Stale the answers of expired entries while the link
	// service could not be reached.
	Hits, Misses, Fills, Stale int64
}

// Stats returns the totals so far.
func (c *Cache) Stats() Stats {
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Fills: c.stored.Load(), Stale: c.staleHits.Load()}
}

// Subscribe drops every code published on link.InvalidationChannel until ctx ends. go-redis
// reconnects by itself; anything missed while disconnected expires within link.CacheTTL.
// It returns once the subscription is confirmed, so no later broadcast is missed.
func (c *Cache) Subscribe(ctx context.Context, rdb redis.UniversalClient, log *slog.Logger) error {
	sub := rdb.Subscribe(ctx, link.InvalidationChannel)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := sub.Receive(rctx); err != nil {
		_ = sub.Close()
		return err
	}
	go func() {
		defer sub.Close()
		ch := sub.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case msg, ok := <-ch:
				if !ok {
					return
				}
				c.Forget(msg.Payload)
			}
		}
	}()
	log.Info("subscribed to link invalidations", "channel", link.InvalidationChannel)
	return nil
}
