package window

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// scriptResult is what reserveScript answered.
type scriptResult struct {
	status   int64 // -1 needs hydration, 0 denied, 1 taken
	used     int
	oldestMs int64 // score of the oldest unit still counted; 0 if none
}

// Reserve is ReserveLimit for a scope with a configured limit.
func (l *Limiter) Reserve(ctx context.Context, scope, key string) (Decision, error) {
	return l.ReserveLimit(ctx, scope, key, nil)
}

// ReserveLimit takes one unit of scope for key if the window has room; limit is the caller's
// own limit of a per-caller scope, nil for the others. A unit is handed out only once it is
// recorded in the ledger; if that fails it is taken back out of Redis and the caller gets a
// 503.
func (l *Limiter) ReserveLimit(ctx context.Context, scope, key string, limit *int) (Decision, error) {
	p, err := l.policyWithLimit(scope, key, limit)
	if err != nil {
		return Decision{}, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	k := keysFor(scope, key)
	var id string
	now, res, err := l.hydrated(ctx, "reserve quota", scope, key, p, func(now time.Time) (scriptResult, error) {
		id = newUnitID(now)
		return l.runReserve(ctx, k, p, now, id)
	})
	if err != nil {
		return Decision{}, err
	}
	d := decide(p, now, res)
	if !d.Allowed {
		return d, nil
	}
	if !p.Ephemeral {
		if err := l.record(ctx, k, bucketOf(scope, key, p, now.UnixMilli()), id); err != nil {
			return Decision{}, err
		}
	}
	d.ID = id
	return d, nil
}

// MaxUnitsPerReservation bounds ReserveMany: a bulk creation of at most 100 links.
const MaxUnitsPerReservation = 100

// ReserveMany takes up to count units of scope for key at once, as many as the window has
// room for (all or some or none), in one step of the counter and one write of the ledger:
// the reservation of a bulk action. The decision is allowed when it took any; its IDs name
// them, each released on its own. Like ReserveLimit, nothing is handed out unless recorded.
func (l *Limiter) ReserveMany(ctx context.Context, scope, key string, limit *int, count int) (Decision, error) {
	p, err := l.policyWithLimit(scope, key, limit)
	if err != nil {
		return Decision{}, err
	}
	if count < 1 || count > MaxUnitsPerReservation {
		return Decision{}, errs.Invalid("count must be between 1 and %d", MaxUnitsPerReservation)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	k := keysFor(scope, key)
	var prefix string
	var granted int
	now, res, err := l.hydrated(ctx, "reserve quota", scope, key, p, func(now time.Time) (scriptResult, error) {
		prefix = newUnitID(now)
		nowMs, winMs := now.UnixMilli(), p.Window.Milliseconds()
		raw, err := reserveManyScript.Run(ctx, l.rdb, []string{k.units, k.marker}, nowMs, nowMs-winMs, p.Limit, prefix, winMs, count).Slice()
		if err != nil {
			return scriptResult{}, fmt.Errorf("run counter script: %w", err)
		}
		if len(raw) != 4 {
			return scriptResult{}, fmt.Errorf("counter script answered %d values", len(raw))
		}
		n, _ := raw[3].(int64)
		granted = int(n)
		return parseScriptResult(raw[:3])
	})
	if err != nil {
		return Decision{}, err
	}
	d := decide(p, now, res)
	if granted == 0 {
		return d, nil
	}
	d.Allowed, d.RetryAfter = true, 0
	ids := make([]string, granted)
	for i := range ids {
		ids[i] = prefix + "." + strconv.Itoa(i+1)
	}
	// An ephemeral scope is counted in Redis alone.
	if err := l.recordMany(ctx, p, bucketOf(scope, key, p, now.UnixMilli()), granted); err != nil {
		uctx, cancel := cleanupContext(ctx)
		defer cancel()
		members := make([]any, len(ids))
		for i, id := range ids {
			members[i] = id
		}
		if rerr := removeManyScript.Run(uctx, l.rdb, []string{k.units}, members...).Err(); rerr != nil {
			l.log.ErrorContext(ctx, "undo unrecorded units failed; redis counts more units than the ledger",
				"scope", scope, "units", granted, "err", rerr)
		}
		return Decision{}, unavailable("record quota", err)
	}
	d.IDs = ids
	return d, nil
}

// Usage reads scope's counter for key without taking a unit: the units in the window and
// when the oldest leaves it. limit is as in ReserveLimit.
func (l *Limiter) Usage(ctx context.Context, scope, key string, limit *int) (Decision, error) {
	p, err := l.policyWithLimit(scope, key, limit)
	if err != nil {
		return Decision{}, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	k := keysFor(scope, key)
	now, res, err := l.hydrated(ctx, "read quota", scope, key, p, func(now time.Time) (scriptResult, error) {
		return l.runScript(ctx, usageScript, k, now.UnixMilli(), now.UnixMilli()-p.Window.Milliseconds())
	})
	if err != nil {
		return Decision{}, err
	}
	d := decide(p, now, res)
	d.RetryAfter = 0
	return d, nil
}

// hydrated runs a counter script at the current time, rebuilding the counter from the ledger
// whenever Redis answers that it lost it, a bounded number of times.
func (l *Limiter) hydrated(ctx context.Context, op, scope, key string, p Policy, run func(now time.Time) (scriptResult, error)) (time.Time, scriptResult, error) {
	for range maxHydrations + 1 {
		now := l.now()
		res, err := run(now)
		if err != nil {
			return now, scriptResult{}, unavailable(op, err)
		}
		if res.status >= 0 {
			return now, res, nil
		}
		if err := l.hydrate(ctx, scope, key, p); err != nil {
			return now, scriptResult{}, err
		}
	}
	return time.Time{}, scriptResult{}, unavailable(op, errors.New("redis state lost again after every hydration"))
}

// record writes a unit taken in Redis to the ledger. If that fails the unit is removed from
// Redis again: a unit is never handed out unless it is durable.
func (l *Limiter) record(ctx context.Context, k redisKeys, b Bucket, id string) error {
	err := l.ledger.Add(ctx, b, 1)
	if err == nil {
		return nil
	}
	uctx, cancel := cleanupContext(ctx)
	defer cancel()
	if rerr := removeScript.Run(uctx, l.rdb, []string{k.units}, id).Err(); rerr != nil {
		// Redis now counts a unit nobody holds; it leaves with the window. Over-counting is
		// the safe direction.
		l.log.ErrorContext(ctx, "undo unrecorded unit failed; redis counts one unit more than the ledger",
			"scope", b.Scope, "err", rerr)
	}
	return unavailable("record quota", err)
}

func (l *Limiter) runReserve(ctx context.Context, k redisKeys, p Policy, now time.Time, id string) (scriptResult, error) {
	nowMs, winMs := now.UnixMilli(), p.Window.Milliseconds()
	return l.runScript(ctx, reserveScript, k, nowMs, nowMs-winMs, p.Limit, id, winMs)
}

// runScript runs one of the counter scripts, which all answer {status, used, oldest score}.
func (l *Limiter) runScript(ctx context.Context, script *redis.Script, k redisKeys, args ...any) (scriptResult, error) {
	raw, err := script.Run(ctx, l.rdb, []string{k.units, k.marker}, args...).Slice()
	if err != nil {
		return scriptResult{}, fmt.Errorf("run counter script: %w", err)
	}
	if len(raw) != 3 {
		return scriptResult{}, fmt.Errorf("counter script answered %d values", len(raw))
	}
	return parseScriptResult(raw)
}

// parseScriptResult reads the {status, used, oldest score} every counter script answers.
func parseScriptResult(raw []any) (scriptResult, error) {
	status, _ := raw[0].(int64)
	used, _ := raw[1].(int64)
	res := scriptResult{status: status, used: int(used)}
	if s, _ := raw[2].(string); s != "" {
		score, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return scriptResult{}, fmt.Errorf("parse oldest score %q: %w", s, err)
		}
		res.oldestMs = int64(score)
	}
	return res, nil
}

// decide turns the script's answer into a Decision.
func decide(p Policy, now time.Time, res scriptResult) Decision {
	d := Decision{Allowed: res.status == 1, Limit: p.Limit, Used: res.used, Window: p.Window}
	if res.oldestMs == 0 {
		return d
	}
	leavesMs := res.oldestMs + p.Window.Milliseconds()
	d.ResetsAt = time.UnixMilli(leavesMs).UTC()
	if !d.Allowed {
		secs := (leavesMs - now.UnixMilli() + 999) / 1000
		d.RetryAfter = time.Duration(max(secs, 1)) * time.Second
	}
	return d
}

// Release gives back a reserved unit whose action failed. Releasing an unknown or already
// released id does nothing: only the call whose ZREM removed the member decrements the ledger.
func (l *Limiter) Release(ctx context.Context, scope, key, id string) error {
	p, err := l.policyFor(scope, key)
	if err != nil {
		return err
	}
	ms, err := parseUnitID(id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opTimeout)
	defer cancel()
	k := keysFor(scope, key)
	removed, err := removeScript.Run(ctx, l.rdb, []string{k.units}, id).Int()
	if err != nil {
		return unavailable("release quota", fmt.Errorf("run remove script: %w", err))
	}
	if removed == 0 {
		return nil
	}
	err = l.ledger.Add(ctx, bucketOf(scope, key, p, ms), -1)
	if err == nil {
		return nil
	}
	// Put the unit back so that the caller's retry removes it and decrements again.
	uctx, ucancel := cleanupContext(ctx)
	defer ucancel()
	if rerr := restoreScript.Run(uctx, l.rdb, []string{k.units}, ms, id, p.Window.Milliseconds()).Err(); rerr != nil {
		l.log.ErrorContext(ctx, "restore released unit failed; the ledger counts one unit more than redis",
			"scope", scope, "err", rerr)
	}
	return unavailable("release quota", err)
}

// recordMany writes granted units to the ledger, unless p is ephemeral.
func (l *Limiter) recordMany(ctx context.Context, p Policy, b Bucket, granted int) error {
	if p.Ephemeral {
		return nil
	}
	return l.ledger.Add(ctx, b, granted)
}
