package window

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// These tests run the rules against the real Redis with a controllable ledger, to force the
// failure and race orderings that the real MongoDB cannot be made to produce on demand.

func newRedisLimiter(t *testing.T, rdb redis.UniversalClient, ledger Ledger, clock *testClock, limit int) *Limiter {
	t.Helper()
	return New(Options{Redis: rdb, Ledger: ledger, Now: clock.Now,
		Scopes: Scopes(Sizes{AnonLimit: limit, AnonWindow: 24 * time.Hour})})
}

func zcard(t *testing.T, rdb redis.UniversalClient, key string) int64 {
	t.Helper()
	n, err := rdb.ZCard(context.Background(), keysFor(scope, key).units).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestLedgerFailureUndoesRedisUnit(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Name("key")
	ledger, clock := newLedger(), newClock()
	l := newRedisLimiter(t, rdb, ledger, clock, 2)
	ctx := context.Background()

	if d, err := l.Reserve(ctx, scope, key); err != nil || !d.Allowed {
		t.Fatalf("first reserve = %+v, %v", d, err)
	}
	ledger.setFailAdd(errLedgerDown)
	_, err := l.Reserve(ctx, scope, key)
	if !errs.IsKind(err, errs.KindUnavailable) {
		t.Fatalf("reserve with ledger down = %v, want 503", err)
	}
	if n := zcard(t, rdb, key); n != 1 {
		t.Fatalf("redis holds %d units after the failed reserve, want 1 (undone)", n)
	}
	ledger.setFailAdd(nil)
	d, err := l.Reserve(ctx, scope, key)
	if err != nil || !d.Allowed || d.Used != 2 {
		t.Fatalf("reserve after recovery = %+v, %v; want allowed, used 2", d, err)
	}
	if got := ledger.total(scope, key); got != 2 {
		t.Fatalf("ledger total = %d, want 2", got)
	}
}

func TestReleaseLedgerFailureKeepsUnitForRetry(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Name("key")
	ledger, clock := newLedger(), newClock()
	l := newRedisLimiter(t, rdb, ledger, clock, 2)
	ctx := context.Background()

	d, err := l.Reserve(ctx, scope, key)
	if err != nil || !d.Allowed {
		t.Fatalf("reserve = %+v, %v", d, err)
	}
	ledger.setFailAdd(errLedgerDown)
	if err := l.Release(ctx, scope, key, d.ID); !errs.IsKind(err, errs.KindUnavailable) {
		t.Fatalf("release with ledger down = %v, want 503", err)
	}
	if n := zcard(t, rdb, key); n != 1 {
		t.Fatalf("redis holds %d units after the failed release, want 1 (restored)", n)
	}
	ledger.setFailAdd(nil)
	if err := l.Release(ctx, scope, key, d.ID); err != nil {
		t.Fatalf("retried release = %v", err)
	}
	if n, total := zcard(t, rdb, key), ledger.total(scope, key); n != 0 || total != 0 {
		t.Fatalf("after retried release redis=%d ledger=%d, want 0 and 0", n, total)
	}
}

// TestStaleHydrationDoesNotOverwrite forces race 3 of hydrate.go: replica A reads the ledger,
// replica B hydrates and takes a unit, then A's hydration lands. A must not replace B's set
// with its stale read, or B's unit would be forgotten.
func TestStaleHydrationDoesNotOverwrite(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Name("key")
	clock := newClock()
	ledger := newLedger()
	ctx := context.Background()
	p := Scopes(Sizes{AnonLimit: 10, AnonWindow: 24 * time.Hour})[scope]
	if err := ledger.Add(ctx, bucketOf(scope, key, p, clock.Now().Add(-time.Hour).UnixMilli()), 3); err != nil {
		t.Fatal(err)
	}
	// A's ledger is a snapshot taken before B's unit: what a slow read returns.
	gated := newLedger()
	if err := gated.Add(ctx, bucketOf(scope, key, p, clock.Now().Add(-time.Hour).UnixMilli()), 3); err != nil {
		t.Fatal(err)
	}
	gated.gate, gated.entered = make(chan struct{}), make(chan struct{}, 1)
	replicaA := newRedisLimiter(t, rdb, gated, clock, 10)
	replicaB := newRedisLimiter(t, rdb, ledger, clock, 10)

	done := make(chan error, 1)
	go func() { done <- replicaA.hydrate(ctx, scope, key, p) }()
	<-gated.entered // A has started reading the ledger

	d, err := replicaB.Reserve(ctx, scope, key) // B hydrates (3) and takes a 4th unit
	if err != nil || !d.Allowed || d.Used != 4 {
		t.Fatalf("reserve on B = %+v, %v; want allowed, used 4", d, err)
	}
	close(gated.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := zcard(t, rdb, key); n != 4 {
		t.Fatalf("redis holds %d units after the stale hydration, want 4", n)
	}
}

// TestConcurrentHydrationsCountOnce lets two replicas read the ledger at the same moment and
// then both reserve: the counter ends at ledger + 2, not more.
func TestConcurrentHydrationsCountOnce(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Name("key")
	clock := newClock()
	ledger := newLedger()
	ctx := context.Background()
	p := Scopes(Sizes{AnonLimit: 10, AnonWindow: 24 * time.Hour})[scope]
	if err := ledger.Add(ctx, bucketOf(scope, key, p, clock.Now().Add(-time.Hour).UnixMilli()), 5); err != nil {
		t.Fatal(err)
	}
	ledger.gate, ledger.entered = make(chan struct{}), make(chan struct{}, 2)
	l := newRedisLimiter(t, rdb, ledger, clock, 10)
	results := make(chan Decision, 2)
	for range 2 {
		go func() {
			d, err := l.Reserve(ctx, scope, key)
			if err != nil {
				t.Error(err)
			}
			results <- d
		}()
	}
	<-ledger.entered
	<-ledger.entered // both are hydrating
	close(ledger.gate)
	used := map[int]bool{}
	for range 2 {
		d := <-results
		if !d.Allowed {
			t.Fatalf("reserve denied: %+v", d)
		}
		used[d.Used] = true
	}
	if !used[6] || !used[7] || zcard(t, rdb, key) != 7 {
		t.Fatalf("used values %v, redis %d; want 6 and 7, 7", used, zcard(t, rdb, key))
	}
}

// One caller's parallel burst writes the ledger once per unit, concurrently (nothing makes
// the units of one counter wait in line), and the ledger counts each exactly once.
func TestParallelUnitsAreEachRecorded(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Name("key")
	ledger, clock := newLedger(), newClock()
	ledger.addDelay = 20 * time.Millisecond
	l := newRedisLimiter(t, rdb, ledger, clock, 100)
	var wg sync.WaitGroup
	ids := make(chan string, 40)
	for range 40 {
		wg.Go(func() {
			d, err := l.Reserve(context.Background(), scope, key)
			if err != nil || !d.Allowed {
				t.Errorf("reserve = %+v, %v", d, err)
				return
			}
			ids <- d.ID
		})
	}
	wg.Wait()
	close(ids)
	if got := ledger.total(scope, key); got != 40 {
		t.Fatalf("ledger total = %d, want 40", got)
	}
	if got := ledger.adds.Load(); got != 40 {
		t.Fatalf("40 parallel units took %d ledger writes, want one each", got)
	}
	if got := ledger.maxInFlight.Load(); got < 2 {
		t.Fatalf("at most %d ledger writes of one counter overlapped; they were serialized", got)
	}
	for id := range ids {
		wg.Go(func() {
			if err := l.Release(context.Background(), scope, key, id); err != nil {
				t.Errorf("release = %v", err)
			}
		})
	}
	wg.Wait()
	if n, total := zcard(t, rdb, key), ledger.total(scope, key); n != 0 || total != 0 {
		t.Fatalf("after every release redis=%d ledger=%d, want 0 and 0", n, total)
	}
}

// Parallel units whose ledger writes fail each take their own unit back out of Redis:
// nothing is handed out that the ledger does not hold.
func TestFailedWritesUndoEveryUnit(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Name("key")
	ledger, clock := newLedger(), newClock()
	ledger.addDelay = 20 * time.Millisecond
	ledger.setFailAdd(errLedgerDown)
	l := newRedisLimiter(t, rdb, ledger, clock, 100)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := l.Reserve(context.Background(), scope, key); !errs.IsKind(err, errs.KindUnavailable) {
				t.Errorf("reserve with ledger down = %v, want 503", err)
			}
		})
	}
	wg.Wait()
	if n, total := zcard(t, rdb, key), ledger.total(scope, key); n != 0 || total != 0 {
		t.Fatalf("after failed writes redis=%d ledger=%d, want 0 and 0", n, total)
	}
	ledger.setFailAdd(nil)
	if d, err := l.Reserve(context.Background(), scope, key); err != nil || !d.Allowed || d.Used != 1 {
		t.Fatalf("reserve after recovery = %+v, %v; want allowed, used 1", d, err)
	}
}
