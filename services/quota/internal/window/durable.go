package window

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// The ledger writes of one counter are serialized across replicas with a Redis lock.
// MongoDB's $inc is atomic, but FerretDB (our test and local backend) applies an update as
// read-modify-write in its own process and loses concurrent increments: 40 concurrent $inc
// upserts on one document left counts of 6 and 18. Writes per counter are rare (a handful a
// day per caller), so serializing them costs nothing in practice, and it keeps the durable
// record exact on both backends. If Redis loses its state, the lock goes with it and two
// writers may overlap once; on MongoDB that is harmless, on FerretDB it may lose one count.
const (
	// lockTTL outlives any write (bounded by opTimeout), so the lock never expires while held
	// unless the holder's process stalls for longer than that.
	lockTTL = 2 * opTimeout
	// lockPoll is how often a waiting writer retries the lock.
	lockPoll = 3 * time.Millisecond
)

// record writes a unit taken in Redis to the ledger. If that fails the unit is removed from
// Redis again: a unit is never handed out unless it is durable.
func (l *Limiter) record(ctx context.Context, k redisKeys, b Bucket, id string) error {
	err := l.withLock(ctx, k, func() error { return l.ledger.Add(ctx, b, 1) })
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

// withLock runs write while holding the counter's write lock.
func (l *Limiter) withLock(ctx context.Context, k redisKeys, write func() error) error {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	for {
		got, err := lockScript.Run(ctx, l.rdb, []string{k.lock}, token, lockTTL.Milliseconds()).Int()
		if err != nil {
			return fmt.Errorf("take ledger lock: %w", err)
		}
		if got == 1 {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for ledger lock: %w", ctx.Err())
		case <-time.After(lockPoll):
		}
	}
	werr := write()
	// The unlock must run even if ctx expired during the write, or waiters stall for lockTTL.
	uctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := unlockScript.Run(uctx, l.rdb, []string{k.lock}, token).Err(); err != nil {
		l.log.WarnContext(ctx, "free ledger lock failed; it expires by itself", "err", err)
	}
	return werr
}

// cleanupContext is for undoing a step after the step itself may have used up ctx's time.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
}
