package pipeline

import (
	"context"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/logging"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// Group is the consumer group of the analytics service on the clicks stream.
const Group = "analytics"

// Handler stores a batch of click entries; the worker acknowledges them only once it
// returns nil, so a click is acknowledged only once it is stored. An entry that is no
// click (a foreign or damaged entry) is logged and skipped: retrying cannot fix it.
//
// A click's referrer, browser and OS are admitted first (see values.go). Visitors already
// stored are remembered in Redis for two days, so a returning visitor's
// record is not inserted again: a lost memory costs speed, never a count.
//
// A save is bounded by saveTimeout, well inside the fold's slotGrace: the clicks it stores
// carry the slot the save began in, and that slot must not be folded before they land.
func Handler(st *store.Store, rdb redis.UniversalClient, log *slog.Logger, now func() time.Time) stream.Handler {
	memoryFailures := &logging.Limiter{Every: time.Minute}
	known := &decisions{}
	return func(ctx context.Context, msgs []stream.Message) error {
		clicks := make([]analytics.Click, 0, len(msgs))
		for _, m := range msgs {
			c, err := analytics.ClickFromValues(m.Values)
			if err != nil {
				log.WarnContext(ctx, "skipping an entry that is no click", "id", m.ID, "err", err)
				continue
			}
			clicks = append(clicks, c)
		}
		if err := admitValues(ctx, rdb, known, clicks); err != nil {
			return err
		}
		ids := make([]string, 0, len(clicks))
		seen := make(map[string]bool, len(clicks))
		for _, c := range clicks {
			if id := store.VisitorID(c); id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		stored, err := storedVisitors(ctx, rdb, ids)
		if err != nil {
			if ok, suppressed := memoryFailures.Allow(time.Now()); ok {
				log.WarnContext(ctx, "visitor memory unavailable; storing every visitor again", "err", err, "suppressed", suppressed)
			}
		}
		sctx, cancel := context.WithTimeout(ctx, saveTimeout)
		defer cancel()
		if err := st.Save(sctx, clicks, now(), stored); err != nil {
			return err
		}
		markVisitors(ctx, rdb, ids, stored)
		return nil
	}
}

// saveTimeout bounds one batch's save; see slotGrace.
const saveTimeout = 5 * time.Second

// visitorKey remembers that a visitor record is stored.
func visitorKey(id string) string { return "linkmesh:analytics:visitor:" + id }

// visitorMemory outlives the day of a visitor record and the next, when late clicks of
// it may still arrive.
const visitorMemory = 48 * time.Hour

// storedVisitors are the ids Redis remembers as stored; none when Redis cannot say.
func storedVisitors(ctx context.Context, rdb redis.UniversalClient, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	pipe := rdb.Pipeline()
	cmds := make([]*redis.IntCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.Exists(ctx, visitorKey(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return map[string]bool{}, err
	}
	for i, c := range cmds {
		if c.Val() == 1 {
			out[ids[i]] = true
		}
	}
	return out, nil
}

// markVisitors remembers the newly stored ids; a failure only costs speed later.
func markVisitors(ctx context.Context, rdb redis.UniversalClient, ids []string, stored map[string]bool) {
	pipe := rdb.Pipeline()
	n := 0
	for _, id := range ids {
		if !stored[id] {
			pipe.Set(ctx, visitorKey(id), 1, visitorMemory)
			n++
		}
	}
	if n > 0 {
		_, _ = pipe.Exec(ctx)
	}
}
