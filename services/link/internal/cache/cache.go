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

const keyPrefix = "linkmesh:link:resolved:"

// absent marks a cached "no such link".
const absent = "-"

// Redis is the link service's Redis cache.
type Redis struct {
	rdb *redis.Client
	log *slog.Logger
}

// New returns a cache over rdb.
func New(rdb *redis.Client, log *slog.Logger) *Redis { return &Redis{rdb: rdb, log: log} }

// Get returns the cached view of code; cached is false on a miss or a Redis failure, so the
// caller falls back to the database.
func (c *Redis) Get(ctx context.Context, code string) (r link.Resolved, found, cached bool) {
	v, err := c.rdb.Get(ctx, keyPrefix+code).Result()
	if err != nil {
		if err != redis.Nil {
			c.log.WarnContext(ctx, "link cache read failed", "err", err)
		}
		return r, false, false
	}
	if v == absent {
		return r, false, true
	}
	if err := json.Unmarshal([]byte(v), &r); err != nil {
		return r, false, false
	}
	return r, true, true
}

// Put stores the view of code (or its absence).
func (c *Redis) Put(ctx context.Context, code string, r link.Resolved, found bool) {
	val, ttl := absent, negativeTTL
	if found {
		b, err := json.Marshal(r)
		if err != nil {
			return
		}
		val, ttl = string(b), link.CacheTTL
	}
	if err := c.rdb.Set(ctx, keyPrefix+code, val, ttl).Err(); err != nil {
		c.log.WarnContext(ctx, "link cache write failed", "err", err)
	}
}

// Invalidate deletes the cached view and publishes code on link.InvalidationChannel.
func (c *Redis) Invalidate(ctx context.Context, code string) {
	if err := c.rdb.Del(ctx, keyPrefix+code).Err(); err != nil {
		c.log.WarnContext(ctx, "link cache delete failed", "code", code, "err", err)
	}
	if err := c.rdb.Publish(ctx, link.InvalidationChannel, code).Err(); err != nil {
		c.log.WarnContext(ctx, "link invalidation publish failed", "code", code, "err", err)
	}
}
