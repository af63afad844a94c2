package window

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// newMiniLimiter is a Limiter on miniredis, for the rules that need no real Redis.
func newMiniLimiter(t *testing.T, limit int, win time.Duration) (*Limiter, *memLedger, *testClock, redis.UniversalClient) {
	t.Helper()
	l, ledger, clock, rdb, _ := newMiniLimiterServer(t, limit, win)
	return l, ledger, clock, rdb
}

func newMiniLimiterServer(t *testing.T, limit int, win time.Duration) (*Limiter, *memLedger, *testClock, redis.UniversalClient, *miniredis.Miniredis) {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ledger, clock := newLedger(), newClock()
	l := New(Options{Redis: rdb, Ledger: ledger, Now: clock.Now,
		Scopes: Scopes(Sizes{AnonLimit: limit, AnonWindow: win})})
	return l, ledger, clock, rdb, mr
}

func TestRequestValidation(t *testing.T) {
	l, _, _, _ := newMiniLimiter(t, 10, 24*time.Hour)
	long := strings.Repeat("k", MaxKeyLength+1)
	reserve := func(scope, key, _ string) error { _, err := l.Reserve(context.Background(), scope, key); return err }
	release := func(scope, key, id string) error { return l.Release(context.Background(), scope, key, id) }
	cases := []struct {
		name           string
		op             func(scope, key, id string) error
		scope, key, id string
		want           string // "" = accepted
	}{
		{"reserve without scope", reserve, "", "k", "", "scope is required"},
		{"reserve unknown scope", reserve, "registered_create", "k", "", `scope "registered_create" is unknown`},
		{"reserve without key", reserve, scope, "", "", "key is required"},
		{"reserve long key", reserve, scope, long, "", "key must be at most 128 characters"},
		{"reserve multibyte key at limit", reserve, scope, strings.Repeat("é", MaxKeyLength), "", ""},
		{"release unknown scope", release, "x", "k", "1-a", `scope "x" is unknown`},
		{"release long key", release, scope, long, "1-a", "key must be at most 128 characters"},
		{"release without id", release, scope, "k", "", "id is required"},
		{"release id without time", release, scope, "k", "abc", "id is not a reservation id"},
		{"release synthetic id", release, scope, "k", "h1763730300000-0", "id is not a reservation id"},
		{"release id without suffix", release, scope, "k", "1763730300000-", "id is not a reservation id"},
		{"release unknown id", release, scope, "k", "1763730300000-abcd", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op(tc.scope, tc.key, tc.id)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			e, ok := errs.As(err)
			if !ok || e.Kind != errs.KindInvalid || e.Message != tc.want {
				t.Fatalf("got %v, want 400 %q", err, tc.want)
			}
		})
	}
}

func TestReserveCountsUpToLimit(t *testing.T) {
	l, ledger, clock, _ := newMiniLimiter(t, 3, time.Hour)
	ctx := context.Background()
	start := clock.Now()
	for i := 1; i <= 3; i++ {
		d, err := l.Reserve(ctx, scope, "k")
		if err != nil || !d.Allowed || d.ID == "" || d.Used != i || d.Remaining() != 3-i || d.Limit != 3 {
			t.Fatalf("reserve %d = %+v, %v", i, d, err)
		}
		if !d.ResetsAt.Equal(start.Add(time.Hour)) {
			t.Fatalf("ResetsAt = %v, want oldest + window %v", d.ResetsAt, start.Add(time.Hour))
		}
		clock.Advance(10 * time.Second)
	}
	clock.Advance(1500 * time.Millisecond) // 31.5 s after the first unit
	d, err := l.Reserve(ctx, scope, "k")
	if err != nil || d.Allowed || d.ID != "" || d.Used != 3 || d.Remaining() != 0 {
		t.Fatalf("4th reserve = %+v, %v; want denied", d, err)
	}
	// 3600 - 31.5 = 3568.5 s, rounded up.
	if d.RetryAfter != 3569*time.Second {
		t.Fatalf("RetryAfter = %v, want 3569s", d.RetryAfter)
	}
	if got := ledger.total(scope, "k"); got != 3 {
		t.Fatalf("ledger total = %d, want 3", got)
	}
}

func TestDecideRetryAfterIsAtLeastOneSecond(t *testing.T) {
	p := Policy{Limit: 1, Window: time.Minute}
	now := time.UnixMilli(1_000_000)
	d := decide(p, now, scriptResult{status: 0, used: 1, oldestMs: now.UnixMilli() - time.Minute.Milliseconds() + 1})
	if d.RetryAfter != time.Second {
		t.Fatalf("RetryAfter = %v, want 1s", d.RetryAfter)
	}
}

func TestHydrationCountsLedgerUnitsUntilBucketEnd(t *testing.T) {
	l, ledger, clock, rdb := newMiniLimiter(t, 5, time.Hour)
	ctx := context.Background()
	now := clock.Now() // 13:05:30
	// The window starts at 12:05:30. 3 units at 12:30 count; 1 at 12:05 counts (its bucket
	// ends 12:06); 2 at 12:04 do not (their bucket ended 12:05).
	for _, b := range []struct {
		start time.Time
		n     int
	}{{now.Add(-35*time.Minute - 30*time.Second), 3}, {now.Add(-60*time.Minute - 30*time.Second), 1}, {now.Add(-61*time.Minute - 30*time.Second), 2}} {
		bucket := bucketOf(scope, "k", l.scopes[scope], b.start.UnixMilli())
		if err := ledger.Add(ctx, bucket, b.n); err != nil {
			t.Fatal(err)
		}
	}
	d, err := l.Reserve(ctx, scope, "k")
	if err != nil || !d.Allowed || d.Used != 5 {
		t.Fatalf("reserve = %+v, %v; want allowed with 4 hydrated + 1", d, err)
	}
	// The oldest hydrated unit is scored at its bucket's end, 12:06.
	want := time.Date(2026, 11, 21, 13, 6, 0, 0, time.UTC)
	if !d.ResetsAt.Equal(want) {
		t.Fatalf("ResetsAt = %v, want %v", d.ResetsAt, want)
	}
	if n, _ := rdb.ZCard(ctx, keysFor(scope, "k").units).Result(); n != 5 {
		t.Fatalf("ZCARD = %d, want 5", n)
	}
	// At 13:06:00 the 12:05 unit leaves; not a millisecond earlier.
	clock.Advance(29*time.Second + 999*time.Millisecond)
	if d, _ := l.Reserve(ctx, scope, "k"); d.Allowed {
		t.Fatalf("reserve at 13:05:59.999 allowed: %+v", d)
	}
	clock.Advance(time.Millisecond)
	if d, _ := l.Reserve(ctx, scope, "k"); !d.Allowed {
		t.Fatalf("reserve at 13:06:00 denied: %+v", d)
	}
}

// TestReserveKeepsRedisStateAlive checks the expiries: each reserve pushes the set's and the
// marker's expiry to a full window, so a counter in use is never rehydrated and never loses a
// unit that is still inside the window. Redis time moves with FastForward, ours with the clock.
func TestReserveKeepsRedisStateAlive(t *testing.T) {
	l, ledger, clock, _, mr := newMiniLimiterServer(t, 3, 24*time.Hour)
	ctx := context.Background()
	if err := ledger.Add(ctx, bucketOf(scope, "k", l.scopes[scope], clock.Now().Add(-time.Hour).UnixMilli()), 1); err != nil {
		t.Fatal(err)
	}
	step := func(d time.Duration) {
		clock.Advance(d)
		mr.FastForward(d)
	}
	if d, err := l.Reserve(ctx, scope, "k"); err != nil || !d.Allowed || d.Used != 2 {
		t.Fatalf("reserve at 0h = %+v, %v; want used 2 (1 hydrated)", d, err)
	}
	step(20 * time.Hour)
	if d, err := l.Reserve(ctx, scope, "k"); err != nil || !d.Allowed || d.Used != 3 {
		t.Fatalf("reserve at 20h = %+v, %v; want used 3", d, err)
	}
	step(20 * time.Hour) // the 0h units left at 24h, the 20h unit counts until 44h
	if d, err := l.Reserve(ctx, scope, "k"); err != nil || !d.Allowed || d.Used != 2 {
		t.Fatalf("reserve at 40h = %+v, %v; want used 2", d, err)
	}
	if n := ledger.bucketsCalls.Load(); n != 1 {
		t.Fatalf("the ledger was read %d times, want once (only the first reserve hydrates)", n)
	}
}
