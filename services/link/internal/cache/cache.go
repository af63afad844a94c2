// Package cache keeps resolved links in Redis for the link service and broadcasts changes on
// pub/sub so every gateway drops its in-process copy.
package cache

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
)

// negativeTTL is shorter than link.CacheTTL: an unknown code is cheap to ask about again and
// may be created at any moment (creation also invalidates it).
const negativeTTL = 5 * time.Second

// The keys of one code share the hash tag {code}, so they live in one Redis Cluster slot
// and the scripts that take them together run on a cluster too. Codes hold no braces.
func resolvedKey(code string) string { return "linkmesh:link:{" + code + "}:resolved" }
func versionKey(code string) string  { return "linkmesh:link:{" + code + "}:version" }
func askedKey(code string) string    { return "linkmesh:link:{" + code + "}:asked" }

// askedTTL outlives any copy of an answer read while the mark stood: the gateways keep one
// for link.CacheTTL from before they asked, and the mark is set before the store is read.
const askedTTL = link.CacheTTL + 5*time.Second

// absent marks a cached "no such link".
const absent = "-"

// putIfUnchanged stores a view only if no invalidation happened since its version was read,
// so a reader that saw the store before a change cannot cache the old view after it.
var putIfUnchanged = redis.NewScript(`
if (redis.call('GET', KEYS[2]) or '') == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 0`)

// getMarking reads the cached view and version and, on a miss, marks the code as asked
// about before the caller reads the store: a creation that finds no mark knows that no layer
// can hold an answer from before it (see Created).
var getMarking = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[3], '1', 'PX', ARGV[1])
end
return {v or '', redis.call('GET', KEYS[2]) or ''}`)

// createdScript invalidates a new code only if some layer may hold an answer about it: its
// asked mark or a cached view exists. It answers 1 when it invalidated.
var createdScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1], KEYS[3]) == 0 then
  return 0
end
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1])
return 1`)

// Redis is the link service's Redis cache.
type Redis struct {
	rdb redis.UniversalClient
	log *slog.Logger
}

// New returns a cache over rdb.
func New(rdb redis.UniversalClient, log *slog.Logger) *Redis { return &Redis{rdb: rdb, log: log} }

// Get returns the cached view of code and its version, in one round trip; cached is false on
// a miss or a Redis failure, so the caller falls back to the database.
func (c *Redis) Get(ctx context.Context, code string) (r link.Resolved, found, cached bool, version string) {
	vals, err := getMarking.Run(ctx, c.rdb, c.keys(code), askedTTL.Milliseconds()).StringSlice()
	if err != nil || len(vals) != 2 {
		c.log.WarnContext(ctx, "link cache read failed", "err", err)
		return r, false, false, ""
	}
	v, version := vals[0], vals[1]
	ok := v != ""
	switch {
	case !ok:
		return r, false, false, version
	case v == absent:
		return r, false, true, version
	}
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		// Another version's shape, or a corrupted value: read through, and say so.
		c.log.WarnContext(ctx, "link cache value unreadable", "code", code, "err", err)
		return link.Resolved{}, false, false, version
	}
	return r, true, true, version
}

// Put stores the view of code (or its absence) read at version.
func (c *Redis) Put(ctx context.Context, code, version string, r link.Resolved, found bool) {
	val, ttl := absent, negativeTTL
	if found {
		b, err := json.Marshal(r)
		if err != nil {
			c.log.WarnContext(ctx, "link cache value not encodable", "code", code, "err", err)
			return
		}
		val, ttl = string(b), link.CacheTTL
	}
	keys := []string{resolvedKey(code), versionKey(code)}
	if err := putIfUnchanged.Run(ctx, c.rdb, keys, version, val, ttl.Milliseconds()).Err(); err != nil {
		c.log.WarnContext(ctx, "link cache write failed", "err", err)
	}
}

// keys are the cache keys of code, in the order the scripts take them.
func (c *Redis) keys(code string) []string {
	return []string{resolvedKey(code), versionKey(code), askedKey(code)}
}

// versionTTL is how long a version outlives its last bump: it only has to outlive reads in
// flight, and a day bounds memory.
const versionTTL = 24 * time.Hour

// Created tells the caches that code now exists. Almost no new code was ever asked about,
// so in the common case this is one round trip that writes nothing and tells no gateway:
// at thousands of creations a second a full invalidation each would keep a version key per
// code for a day and make every gateway drop fills in flight thousands of times a second.
// A code that was asked about (or cached) is invalidated in full.
func (c *Redis) Created(ctx context.Context, code string) {
	n, err := createdScript.Run(ctx, c.rdb, c.keys(code), versionTTL.Milliseconds()).Int()
	if err != nil {
		c.log.WarnContext(ctx, "link cache invalidation failed", "code", code, "err", err)
	}
	if n == 1 || err != nil {
		c.publish(ctx, code)
	}
}

func (c *Redis) publish(ctx context.Context, code string) {
	if err := c.rdb.Publish(ctx, link.InvalidationChannel, code).Err(); err != nil {
		c.log.WarnContext(ctx, "link invalidation publish failed", "code", code, "err", err)
	}
}

// Invalidate bumps the code's version (so in-flight reads cannot store), deletes the cached
// view and publishes code on link.InvalidationChannel.
func (c *Redis) Invalidate(ctx context.Context, code string) {
	pipe := c.rdb.TxPipeline()
	pipe.Incr(ctx, versionKey(code))
	pipe.Expire(ctx, versionKey(code), versionTTL)
	pipe.Del(ctx, resolvedKey(code))
	if _, err := pipe.Exec(ctx); err != nil {
		c.log.WarnContext(ctx, "link cache invalidation failed", "code", code, "err", err)
	}
	c.publish(ctx, code)
}
