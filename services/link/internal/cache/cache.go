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

const (
	keyPrefix     = "linkmesh:link:resolved:"
	versionPrefix = "linkmesh:link:version:"
)

// absent marks a cached "no such link".
const absent = "-"

// putIfUnchanged stores a view only if no invalidation happened since its version was read,
// so a reader that saw the store before a change cannot cache the old view after it.
var putIfUnchanged = redis.NewScript(`
if (redis.call('GET', KEYS[2]) or '') == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
end
return 0`)

// Redis is the link service's Redis cache.
type Redis struct {
	rdb *redis.Client
	log *slog.Logger
}

// New returns a cache over rdb.
func New(rdb *redis.Client, log *slog.Logger) *Redis { return &Redis{rdb: rdb, log: log} }

// Get returns the cached view of code and its version, in one round trip; cached is false on
// a miss or a Redis failure, so the caller falls back to the database.
func (c *Redis) Get(ctx context.Context, code string) (r link.Resolved, found, cached bool, version string) {
	vals, err := c.rdb.MGet(ctx, keyPrefix+code, versionPrefix+code).Result()
	if err != nil {
		c.log.WarnContext(ctx, "link cache read failed", "err", err)
		return r, false, false, ""
	}
	version, _ = vals[1].(string)
	v, ok := vals[0].(string)
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
	keys := []string{keyPrefix + code, versionPrefix + code}
	if err := putIfUnchanged.Run(ctx, c.rdb, keys, version, val, ttl.Milliseconds()).Err(); err != nil {
		c.log.WarnContext(ctx, "link cache write failed", "err", err)
	}
}

// Invalidate bumps the code's version (so in-flight reads cannot store), deletes the cached
// view and publishes code on link.InvalidationChannel.
func (c *Redis) Invalidate(ctx context.Context, code string) {
	pipe := c.rdb.TxPipeline()
	pipe.Incr(ctx, versionPrefix+code)
	// The version only has to outlive reads in flight; a day is plenty and bounds memory.
	pipe.Expire(ctx, versionPrefix+code, 24*time.Hour)
	pipe.Del(ctx, keyPrefix+code)
	if _, err := pipe.Exec(ctx); err != nil {
		c.log.WarnContext(ctx, "link cache invalidation failed", "code", code, "err", err)
	}
	if err := c.rdb.Publish(ctx, link.InvalidationChannel, code).Err(); err != nil {
		c.log.WarnContext(ctx, "link invalidation publish failed", "code", code, "err", err)
	}
}
