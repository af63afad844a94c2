package window_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/quota/internal/store"
	"github.com/linkmesh/linkmesh/services/quota/internal/window"
)

// These tests run the rules against the real Redis and the real MongoDB wire server.

const scope = quota.ScopeAnonymousCreate

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	rdb   redis.UniversalClient
	db    *mongo.Database
	clock *clock
	key   string
	// replicas share Redis, MongoDB and the clock, like replicas of the service do.
	replicas []*window.Limiter
}

// clockStart is when a test's clock starts: far ahead, so that quota_usage's TTL index, which
// deletes by the real clock, never deletes a test's buckets.
var clockStart = time.Date(2126, 11, 21, 13, 5, 30, 0, time.UTC)

func newEnv(t *testing.T, limit int, win time.Duration) *env {
	t.Helper()
	e := &env{rdb: testenv.Redis(t), db: testenv.Mongo(t), key: testenv.Name("key"),
		clock: &clock{t: clockStart}}
	if err := store.Prepare(context.Background(), e.db); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		e.replicas = append(e.replicas, window.New(window.Options{
			Redis: e.rdb, Ledger: store.New(e.db), Now: e.clock.Now,
			Scopes: window.Scopes(window.Sizes{AnonLimit: limit, AnonWindow: win}),
		}))
	}
	return e
}

func (e *env) reserve(t *testing.T, replica int) window.Decision {
	t.Helper()
	d, err := e.replicas[replica%len(e.replicas)].Reserve(context.Background(), scope, e.key)
	if err != nil {
		t.Fatalf("reserve: %v", err)
	}
	return d
}

// durable sums the key's counts in quota_usage.
func (e *env) durable(t *testing.T) int {
	t.Helper()
	cur, err := e.db.Collection(store.Collection).Find(context.Background(), bson.D{{Key: "identity_key", Value: e.key}})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		Count int `bson:"count"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range docs {
		n += d.Count
	}
	return n
}

// forgetRedis deletes every Redis key of the identity, as a Redis restart or FLUSHALL would.
func (e *env) forgetRedis(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	keys, err := e.rdb.Keys(ctx, "*"+e.key+"*").Result()
	if err != nil || len(keys) < 2 {
		t.Fatalf("found Redis keys %v (%v); want the set and the marker", keys, err)
	}
	if err := e.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestLimitThenDeniedWithRetryAfter(t *testing.T) {
	e := newEnv(t, 10, 24*time.Hour)
	for i := 1; i <= 10; i++ {
		if d := e.reserve(t, i); !d.Allowed || d.Used != i || d.Remaining() != 10-i {
			t.Fatalf("reserve %d = %+v; want allowed", i, d)
		}
		e.clock.Advance(time.Minute)
	}
	e.clock.Advance(2*time.Hour + 500*time.Millisecond) // 2h10m0.5s after the first unit
	d := e.reserve(t, 0)
	if d.Allowed || d.ID != "" || d.Used != 10 || d.Remaining() != 0 {
		t.Fatalf("11th reserve = %+v; want denied", d)
	}
	want := 24*time.Hour - 2*time.Hour - 10*time.Minute // window - elapsed, rounded up
	if d.RetryAfter != want {
		t.Fatalf("RetryAfter = %v, want %v", d.RetryAfter, want)
	}
	if got := e.durable(t); got != 10 {
		t.Fatalf("quota_usage counts %d, want 10", got)
	}
}

func TestConcurrentReservesAreExact(t *testing.T) {
	e := newEnv(t, 10, 24*time.Hour)
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			d, err := e.replicas[i%3].Reserve(context.Background(), scope, e.key)
			if err != nil {
				t.Errorf("reserve: %v", err)
				return
			}
			if d.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 10 {
		t.Fatalf("%d of 40 concurrent reserves allowed, want 10", got)
	}
	if got := e.durable(t); got != 10 {
		t.Fatalf("quota_usage counts %d, want 10", got)
	}
}

// TestConcurrentUnitsOfOneBucketAreExact: 64 units of one counter taken at once, on three
// replicas, all land in one new bucket, so their upserts race to create it and then
// increment it; its count ends exact, and so it does after 64 concurrent releases.
func TestConcurrentUnitsOfOneBucketAreExact(t *testing.T) {
	const units = 64
	e := newEnv(t, 100, 24*time.Hour)
	start := make(chan struct{})
	ids := make(chan string, units)
	var wg sync.WaitGroup
	for i := range units {
		wg.Go(func() {
			<-start
			d, err := e.replicas[i%3].Reserve(context.Background(), scope, e.key)
			if err != nil || !d.Allowed {
				t.Errorf("reserve = %+v, %v", d, err)
				return
			}
			ids <- d.ID
		})
	}
	close(start)
	wg.Wait()
	close(ids)
	n, err := e.db.Collection(store.Collection).CountDocuments(context.Background(), bson.D{{Key: "identity_key", Value: e.key}})
	if err != nil || n != 1 {
		t.Fatalf("quota_usage holds %d buckets of the counter (%v), want 1", n, err)
	}
	if got := e.durable(t); got != units {
		t.Fatalf("quota_usage counts %d after %d concurrent reserves, want %d", got, units, units)
	}
	i := 0
	for id := range ids {
		replica := e.replicas[i%3]
		wg.Go(func() {
			if err := replica.Release(context.Background(), scope, e.key, id); err != nil {
				t.Errorf("release: %v", err)
			}
		})
		i++
	}
	wg.Wait()
	if got := e.durable(t); got != 0 {
		t.Fatalf("quota_usage counts %d after releasing every unit, want 0", got)
	}
}

func TestReleaseFreesOneUnitOnce(t *testing.T) {
	e := newEnv(t, 2, 24*time.Hour)
	ctx := context.Background()
	first, second := e.reserve(t, 0), e.reserve(t, 1)
	if !first.Allowed || !second.Allowed || e.reserve(t, 2).Allowed {
		t.Fatal("want two allowed, then denied")
	}
	for range 2 { // the second release of the same id must change nothing
		if err := e.replicas[0].Release(ctx, scope, e.key, first.ID); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	if got := e.durable(t); got != 1 {
		t.Fatalf("quota_usage counts %d after releasing one unit twice, want 1", got)
	}
	if d := e.reserve(t, 1); !d.Allowed || d.Used != 2 {
		t.Fatalf("reserve after release = %+v; want allowed, used 2", d)
	}
	if d := e.reserve(t, 2); d.Allowed {
		t.Fatalf("double release freed a second unit: %+v", d)
	}
	if err := e.replicas[0].Release(ctx, scope, e.key, "1763730300000-0123abcd"); err != nil {
		t.Fatalf("release of an unknown id = %v, want no-op", err)
	}
	if got := e.durable(t); got != 2 {
		t.Fatalf("quota_usage counts %d, want 2", got)
	}
}

func TestRedisLossKeepsTheCount(t *testing.T) {
	e := newEnv(t, 10, 24*time.Hour)
	for i := range 10 {
		if d := e.reserve(t, i); !d.Allowed {
			t.Fatalf("reserve %d denied", i)
		}
		e.clock.Advance(time.Second)
	}
	e.forgetRedis(t)
	e.clock.Advance(time.Hour)
	d := e.reserve(t, 0)
	if d.Allowed || d.Used != 10 {
		t.Fatalf("reserve after losing Redis = %+v; want denied, used 10", d)
	}
	// Hydrated units count until their bucket's end (13:06) + window: conservative, at most a
	// minute longer than the real first unit (13:05:30).
	if lo, hi := 23*time.Hour-30*time.Second, 23*time.Hour+30*time.Second; d.RetryAfter < lo || d.RetryAfter > hi {
		t.Fatalf("RetryAfter = %v, want within [%v, %v]", d.RetryAfter, lo, hi)
	}
}

func TestConcurrentHydrationsAfterRedisLoss(t *testing.T) {
	e := newEnv(t, 10, 24*time.Hour)
	for i := range 6 {
		if d := e.reserve(t, i); !d.Allowed {
			t.Fatalf("reserve %d denied", i)
		}
	}
	e.forgetRedis(t)
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for i := range 12 { // every one of them starts without the marker and hydrates
		wg.Go(func() {
			d, err := e.replicas[i%3].Reserve(context.Background(), scope, e.key)
			if err != nil {
				t.Errorf("reserve: %v", err)
				return
			}
			if d.Allowed {
				allowed.Add(1)
			} else if d.Used != 10 {
				t.Errorf("denied with used %d, want 10", d.Used)
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 4 {
		t.Fatalf("%d reserves allowed after hydration, want 4 (6 of 10 were already used)", got)
	}
	if got := e.durable(t); got != 10 {
		t.Fatalf("quota_usage counts %d, want 10", got)
	}
}

func TestUnitsLeaveTheWindowOneByOne(t *testing.T) {
	e := newEnv(t, 3, time.Hour)
	for range 3 { // units at +0, +10m, +20m
		if d := e.reserve(t, 0); !d.Allowed {
			t.Fatal("reserve denied")
		}
		e.clock.Advance(10 * time.Minute)
	}
	// now +30m: full; the first unit leaves at +60m, the second at +70m.
	steps := []struct {
		advance time.Duration
		allowed bool
	}{
		{0, false},
		{30*time.Minute - time.Millisecond, false}, // +59:59.999
		{time.Millisecond, true},                   // +60m: the first unit left, one place
		{0, false},                                 // and only one
		{10 * time.Minute, true},                   // +70m: the second unit left
		{0, false},
	}
	for i, s := range steps {
		e.clock.Advance(s.advance)
		if d := e.reserve(t, i); d.Allowed != s.allowed {
			t.Fatalf("step %d: %+v, want allowed=%v", i, d, s.allowed)
		}
	}
}
