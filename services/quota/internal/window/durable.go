package window

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// The ledger writes of one counter are serialized across replicas with a Redis lock.
// MongoDB's $inc is atomic, but FerretDB (our test and local backend) applies an update as
// read-modify-write in its own process and loses concurrent increments: 40 concurrent $inc
// upserts on one document left counts of 6 and 18. So no two writers ever update one bucket
// at once. If Redis loses its state, the lock goes with it and two writers may overlap once;
// on MongoDB that is harmless, on FerretDB it may lose one count.
//
// Serializing one write per unit made one caller creating in parallel wait in line for the
// lock (222 creations/s, then 503s once the line outgrew the operation's deadline). Writes
// are therefore combined: the changes of one bucket that arrive while a write of it is
// waiting for the lock join that write, which applies their sum in one $inc and answers them
// all. One caller's parallel burst costs a handful of ledger writes instead of one each.
const (
	// lockTTL outlives any write (bounded by opTimeout), so the lock never expires while held
	// unless the holder's process stalls for longer than that.
	lockTTL = 2 * opTimeout
	// lockPoll is how often a waiting writer retries the lock.
	lockPoll = 3 * time.Millisecond
)

// batch is the changes of one bucket waiting for, or being applied by, one ledger write.
type batch struct {
	delta int           // sum of the joined changes; read by the writer once sealed
	done  chan struct{} // closed when err is final
	err   error
}

// batches holds the open batch of each bucket: the one new changes join.
type batches struct {
	mu   sync.Mutex
	open map[string]*batch
}

// addDurably applies delta to bucket b in the ledger, combined with the changes of b that
// other callers make meanwhile, and returns when the combined write is done. It always
// returns once the write has finished, whatever happens to a joiner's own context, so a
// caller knows whether its change is in the ledger.
func (l *Limiter) addDurably(ctx context.Context, k redisKeys, b Bucket, delta int) error {
	id := b.Scope + "\x00" + b.Key + "\x00" + strconv.FormatInt(b.Start.UnixMilli(), 10)
	l.batches.mu.Lock()
	if l.batches.open == nil {
		l.batches.open = map[string]*batch{}
	}
	bt, joined := l.batches.open[id]
	if !joined {
		bt = &batch{done: make(chan struct{})}
		l.batches.open[id] = bt
	}
	bt.delta += delta
	l.batches.mu.Unlock()
	if joined {
		<-bt.done
		return bt.err
	}
	// The first change of a batch writes it. Whatever joins before the lock is taken rides
	// along; the batch is sealed (closed to newcomers) as the write starts.
	bt.err = l.withLock(ctx, k, func() error {
		l.batches.mu.Lock()
		delete(l.batches.open, id)
		n := bt.delta
		l.batches.mu.Unlock()
		if n == 0 {
			return nil
		}
		return l.ledger.Add(ctx, b, n)
	})
	if bt.err != nil {
		// Sealed here if the lock was never taken, so no change joins a failed batch late.
		l.batches.mu.Lock()
		if l.batches.open[id] == bt {
			delete(l.batches.open, id)
		}
		l.batches.mu.Unlock()
	}
	close(bt.done)
	return bt.err
}

// record writes a unit taken in Redis to the ledger. If that fails the unit is removed from
// Redis again: a unit is never handed out unless it is durable.
func (l *Limiter) record(ctx context.Context, k redisKeys, b Bucket, id string) error {
	err := l.addDurably(ctx, k, b, 1)
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
