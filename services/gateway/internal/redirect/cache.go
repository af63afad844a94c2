// Package redirect serves GET /{code} from an in-process cache of resolved links, filled from
// the link service on a miss and invalidated by Redis pub/sub.
package redirect

import (
	"context"
	"log/slog"
	"strings"
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
	// fetched is when the entry was filled; it is refetched link.CacheTTL later.
	fetched time.Time
}

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

// Cache is the gateway's cache of resolved links: bounded in size, every entry gone after
// link.CacheTTL, one concurrent fill per code.
//
// Entries carry their own fetch time and are checked against the caller's clock instead of
// using an expiring LRU, because that reads the system clock on every hit, and the redirect
// path already has the request's start time for free.
type Cache struct {
	entries  *lru.Cache[string, Entry]
	resolver Resolver
	fills    singleflight.Group
	// gen counts invalidations; a fill that started before one must not store its answer,
	// which may predate the change.
	gen atomic.Uint64
}

// NewCache returns a cache of at most size entries.
func NewCache(size int, resolver Resolver) *Cache {
	entries, err := lru.New[string, Entry](size)
	if err != nil {
		panic(err) // only for size < 1, which configuration refuses
	}
	return &Cache{entries: entries, resolver: resolver}
}

// Lookup returns the entry for code as of now, asking the link service on a miss or when the
// entry is older than link.CacheTTL. code may alias a request buffer; it is copied before it
// is kept.
func (c *Cache) Lookup(ctx context.Context, code string, now time.Time) (Entry, error) {
	if e, ok := c.entries.Get(code); ok && now.Sub(e.fetched) < link.CacheTTL {
		return e, nil
	}
	code = strings.Clone(code)
	// The fill serves every waiter, so the first caller going away must not cancel it.
	fillCtx := context.WithoutCancel(ctx)
	v, err, _ := c.fills.Do(code, func() (any, error) {
		gen := c.gen.Load()
		r, err := c.resolver.Resolve(fillCtx, code)
		var e Entry
		switch {
		case err == nil:
			e = Entry{Found: true, Resolved: r, fetched: now}
		case errs.IsKind(err, errs.KindNotFound):
			e = Entry{fetched: now}
		default:
			return Entry{}, err
		}
		if c.gen.Load() == gen {
			c.entries.Add(code, e)
		}
		return e, nil
	})
	if err != nil {
		return Entry{}, err
	}
	return v.(Entry), nil
}

// Forget drops code, so the next visit asks the link service again: it also keeps fills in
// flight from storing, and new visits from joining them.
func (c *Cache) Forget(code string) {
	c.gen.Add(1)
	c.fills.Forget(code)
	c.entries.Remove(code)
}

// Len is the number of cached entries.
func (c *Cache) Len() int { return c.entries.Len() }

// Subscribe drops every code published on link.InvalidationChannel until ctx ends. go-redis
// reconnects by itself; anything missed while disconnected expires within link.CacheTTL.
// It returns once the subscription is confirmed, so no later broadcast is missed.
func (c *Cache) Subscribe(ctx context.Context, rdb *redis.Client, log *slog.Logger) error {
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
