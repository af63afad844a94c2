package window

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Hydration: Redis is the fast path, the ledger the durable record. A marker key per counter
// says "the sorted set is authoritative". Every path that makes the set authoritative sets
// the marker, and the set and the marker always receive the same expiry in the same script,
// so they vanish together (Redis restart, FLUSHALL, eviction, or a window without reserves).
// Without the marker, reserveScript refuses to count and Reserve rebuilds the set from the
// ledger: one synthetic member per recorded unit, scored at its bucket's END. A unit taken
// at 13:05:59 is therefore counted until 13:06 + window, never less than its real life, at
// most one minute longer (the conservative direction).
//
// Races, and why they are safe:
//
//  1. Two replicas hydrate the same counter at once. Both read the ledger, both run
//     hydrateScript; the script is atomic and does nothing if the marker already exists, so
//     the second one is a no-op and nothing is counted twice. Both then re-run the reserve.
//  2. Reserve during a hydration. reserveScript checks the marker inside the same atomic
//     step, so no unit can be added to a set that is not yet authoritative; a replica that
//     arrives while another is reading the ledger also hydrates (case 1) or, if the other
//     finished first, counts against the rebuilt set.
//  3. A slow hydrator whose ledger read is stale: it can only write if the marker is absent.
//     While units are being taken, each reserve pushes the marker's expiry to now + window,
//     so the marker can only have vanished again after a whole window without reserves — by
//     then every unit the stale read missed has left the window anyway.
//  4. Redis loses its state while a reservation is between its Redis step and its ledger
//     write (one atomic update, a few milliseconds). A hydration in that gap misses those
//     units: the only under-count, bounded by the units of the counter waiting for a ledger
//     write at the instant of the loss. Writing the ledger first would instead hand out
//     units Redis then refuses.
//  5. Release after a loss: the real member is gone (only synthetic ones exist), ZREM
//     removes nothing and the unit stays counted until it leaves the window — conservative,
//     and it keeps double releases from decrementing twice.
//  6. Clocks: scores come from the replicas' clocks (passed as ARGV, so tests can move
//     time), expiry from Redis's. Skew between them shifts a window edge by the skew only;
//     the marker and the set still share one expiry.
func (l *Limiter) hydrate(ctx context.Context, scope, key string, p Policy) error {
	now := l.now()
	cutoffMs := now.UnixMilli() - p.Window.Milliseconds()
	from := time.UnixMilli(cutoffMs - cutoffMs%time.Minute.Milliseconds()).UTC()
	var buckets []Bucket
	if !p.Ephemeral { // an ephemeral counter starts afresh: the ledger holds none of it
		var err error
		if buckets, err = l.ledger.Buckets(ctx, scope, key, from); err != nil {
			return unavailable("hydrate quota", fmt.Errorf("read ledger: %w", err))
		}
	}
	args := []any{p.Window.Milliseconds()}
	for _, b := range buckets {
		endMs := b.Start.Add(time.Minute).UnixMilli()
		if endMs <= cutoffMs {
			continue // every unit of the bucket has left the window
		}
		prefix := "h" + strconv.FormatInt(b.Start.UnixMilli(), 10) + "-"
		for i := range b.Count {
			args = append(args, endMs, prefix+strconv.Itoa(i))
		}
	}
	k := keysFor(scope, key)
	if err := hydrateScript.Run(ctx, l.rdb, []string{k.units, k.marker}, args...).Err(); err != nil {
		return unavailable("hydrate quota", fmt.Errorf("run hydrate script: %w", err))
	}
	return nil
}
