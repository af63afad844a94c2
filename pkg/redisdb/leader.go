package redisdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/logging"
)

// Lease timing: the leader renews every LeaseRenew, also while it works; a leader that
// stops renewing (killed, partitioned) is replaced LeaseTTL later, and a leader whose
// renewal fails stops working at once.
const (
	LeaseTTL   = 15 * time.Second
	LeaseRenew = 3 * time.Second
)

var renewLease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0`)

var releaseLease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// Leader runs Work on one replica at a time. Every replica runs a Leader with the same Key;
// a Redis lease picks the one that works, so a single writer owns whatever Work updates
// (FerretDB loses concurrent read-modify-write updates of one document).
type Leader struct {
	// Key is the Redis key naming the replica that works.
	Key    string
	Redis  redis.UniversalClient
	Logger *slog.Logger
	// What names the work in log lines.
	What string
	// Interval is how often the leader works (default 1s).
	Interval time.Duration
	// Work does one round. Its context ends the moment the lease is lost.
	Work func(ctx context.Context) error
}

// Run works, while it holds the lease, every Interval until ctx ends; then it hands the
// lease over at once rather than after LeaseTTL.
func (l Leader) Run(ctx context.Context) {
	if l.Interval == 0 {
		l.Interval = time.Second
	}
	failures := &logging.Limiter{Every: time.Minute}
	var b [12]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = releaseLease.Run(rctx, l.Redis, []string{l.Key}, token).Err()
		cancel()
	}()
	t := time.NewTicker(l.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !l.hold(ctx, token, failures) {
			continue
		}
		if err := l.workWhileLeader(ctx, token, failures); err != nil && ctx.Err() == nil {
			l.Logger.WarnContext(ctx, l.What+" failed; retrying", "err", err)
		}
	}
}

// hold takes the lease, or keeps it if it is ours, and reports whether we hold it.
func (l Leader) hold(ctx context.Context, token string, failures *logging.Limiter) bool {
	ok, err := renewLease.Run(ctx, l.Redis, []string{l.Key}, token, LeaseTTL.Milliseconds()).Int()
	if err != nil && ctx.Err() == nil {
		if allow, suppressed := failures.Allow(time.Now()); allow {
			l.Logger.WarnContext(ctx, l.What+" lease unavailable; not working", "err", err, "suppressed", suppressed)
		}
	}
	return err == nil && ok == 1
}

// workWhileLeader runs one round of Work, renewing the lease meanwhile; the moment a
// renewal fails the round's context ends, before another replica can take over.
func (l Leader) workWhileLeader(ctx context.Context, token string, failures *logging.Limiter) error {
	lctx, lost := context.WithCancel(ctx)
	defer lost()
	go func() {
		t := time.NewTicker(LeaseRenew)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
				if !l.hold(lctx, token, failures) {
					lost()
					return
				}
			}
		}
	}()
	return l.Work(lctx)
}
