// Package window holds the quota rules: sliding-window counters per (scope, identity key),
// exact under concurrency through one atomic Redis script per reservation, and durable
// through per-minute buckets in a Ledger, from which Redis is rebuilt when it lost its state.
package window

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// opTimeout bounds one reserve or release, detached from the caller's cancellation so that a
// caller who gives up never leaves Redis and the ledger disagreeing.
const opTimeout = 5 * time.Second

// maxHydrations bounds how often one reserve rebuilds Redis state before giving up.
const maxHydrations = 3

// Bucket is the durable record of one minute of one counter.
type Bucket struct {
	Scope     string
	Key       string
	Anonymous bool
	// Start is the minute the bucket covers, [Start, Start+1m), UTC.
	Start time.Time
	// Count is the number of units taken in that minute (filled by Ledger.Buckets).
	Count int
	// ExpiresAt is when every unit of the bucket has left the window; the ledger deletes the
	// bucket after it.
	ExpiresAt time.Time
}

// Ledger is the durable record of reservations.
type Ledger interface {
	// Add changes the bucket's count by delta, atomically: concurrent Adds of one bucket from
	// any number of replicas all count. A positive delta creates a missing bucket; a
	// negative one never creates a bucket nor takes a count below zero.
	Add(ctx context.Context, b Bucket, delta int) error
	// Buckets returns the buckets of (scope, key) that start at or after from and count
	// anything, oldest first.
	Buckets(ctx context.Context, scope, key string, from time.Time) ([]Bucket, error)
}

// Decision is the outcome of a reserve.
type Decision struct {
	Allowed bool
	// ID names the unit taken, for Release; empty when not allowed.
	ID string
	// IDs name the units a reservation of several took (ReserveMany), each for Release;
	// their number is how many were granted.
	IDs    []string
	Limit  int
	Used   int
	Window time.Duration
	// RetryAfter is how long until the oldest counted unit leaves the window; set when not
	// allowed, whole seconds, at least one.
	RetryAfter time.Duration
	// ResetsAt is when the oldest counted unit leaves the window, i.e. when one more unit
	// becomes available.
	ResetsAt time.Time
}

// Remaining is how many units are still available in the window.
func (d Decision) Remaining() int { return max(0, d.Limit-d.Used) }

// Options configure a Limiter.
type Options struct {
	Redis  redis.Scripter
	Ledger Ledger
	// Scopes is the scope table, see Scopes.
	Scopes map[string]Policy
	// Now is the clock; time.Now when nil. Tests inject their own to move time.
	Now    func() time.Time
	Logger *slog.Logger
}

// Limiter reserves and releases units.
type Limiter struct {
	rdb    redis.Scripter
	ledger Ledger
	scopes map[string]Policy
	now    func() time.Time
	log    *slog.Logger
}

// New builds a Limiter.
func New(opts Options) *Limiter {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Limiter{rdb: opts.Redis, ledger: opts.Ledger, scopes: opts.Scopes, now: opts.Now, log: opts.Logger}
}

// newUnitID returns "<unix-ms>-<random hex>": unique, and it tells Release which minute
// bucket the unit was recorded in.
func newUnitID(now time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatInt(now.UnixMilli(), 10) + "-" + hex.EncodeToString(b[:])
}

// parseUnitID returns the unix ms a unit id was taken at.
func parseUnitID(id string) (int64, error) {
	if id == "" {
		return 0, errs.Invalid("id is required")
	}
	msText, suffix, ok := strings.Cut(id, "-")
	if ok && suffix != "" && len(id) <= 64 {
		if ms, err := strconv.ParseInt(msText, 10, 64); err == nil && ms > 0 {
			return ms, nil
		}
	}
	return 0, errs.Invalid("id is not a reservation id")
}

// bucketOf returns the minute bucket of a unit taken at unix ms.
func bucketOf(scope, key string, p Policy, ms int64) Bucket {
	start := time.UnixMilli(ms - ms%time.Minute.Milliseconds()).UTC()
	return Bucket{Scope: scope, Key: key, Anonymous: p.Anonymous, Start: start,
		ExpiresAt: start.Add(time.Minute + p.Window)}
}

// cleanupContext is for undoing a step after the step itself may have used up ctx's time.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
}

// unavailable wraps a datastore failure as a 503.
func unavailable(op string, err error) error {
	return fmt.Errorf("%s: %w", op, errs.Unavailable("quota store unavailable", err))
}
