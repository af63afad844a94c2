package window_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/services/quota/internal/store"
	"github.com/linkmesh/linkmesh/services/quota/internal/window"
)

// A reservation of several takes as many units as the window has room for, in one step,
// durably: racing bulk reservations never exceed the limit, each unit is released on its
// own, and a Redis loss rebuilds the count from the ledger.
func TestReserveManyIsExact(t *testing.T) {
	const limit = 50
	e := newEnv(t, limit, 24*time.Hour)
	ctx := context.Background()
	d, err := e.replicas[0].ReserveMany(ctx, scope, e.key, nil, 20)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed || len(d.IDs) != 20 || d.Used != 20 || d.Remaining() != 30 {
		t.Fatalf("first bulk: %+v", d)
	}
	var wg sync.WaitGroup
	granted := make([]int, 6)
	for i := range granted {
		wg.Go(func() {
			d, err := e.replicas[i%3].ReserveMany(ctx, scope, e.key, nil, 9)
			if err != nil {
				t.Error(err)
				return
			}
			granted[i] = len(d.IDs)
		})
	}
	wg.Wait()
	total := 20
	for _, g := range granted {
		total += g
	}
	if total != limit || e.durable(t) != limit {
		t.Fatalf("granted %d in all (%v), ledger %d; want %d", total, granted, e.durable(t), limit)
	}
	d, err = e.replicas[1].ReserveMany(ctx, scope, e.key, nil, 5)
	if err != nil || d.Allowed || len(d.IDs) != 0 || d.RetryAfter <= 0 {
		t.Fatalf("a full window: %+v %v", d, err)
	}
	// Units of a bulk reservation are released one by one.
	first, _ := e.replicas[0].ReserveMany(ctx, scope, e.key+"-other", nil, 3)
	for _, id := range first.IDs {
		if err := e.replicas[2].Release(ctx, scope, e.key+"-other", id); err != nil {
			t.Fatal(err)
		}
	}
	if d, _ := e.replicas[0].Usage(ctx, scope, e.key+"-other", nil); d.Used != 0 {
		t.Fatalf("after releasing every unit: %+v", d)
	}
	// Redis forgets; the ledger remembers.
	e.forgetRedis(t)
	d, err = e.replicas[0].ReserveMany(ctx, scope, e.key, nil, 1)
	if err != nil || d.Allowed || d.Used != limit {
		t.Fatalf("after a Redis loss: %+v %v", d, err)
	}
	if _, err := e.replicas[0].ReserveMany(ctx, scope, e.key, nil, 101); err == nil {
		t.Fatal("101 units at once must be refused")
	}
}

// An ephemeral scope (an API token's request rate) limits in Redis alone: nothing reaches
// the ledger, and a Redis loss starts its window afresh.
func TestEphemeralScopeWritesNoLedger(t *testing.T) {
	e := newEnv(t, 1, time.Hour)
	lim := window.New(window.Options{Redis: e.rdb, Ledger: store.New(e.db), Now: e.clock.Now,
		Scopes: window.Scopes(window.Sizes{AnonLimit: 1, AnonWindow: time.Hour, TokenRate: 3})})
	ctx := context.Background()
	for i := range 4 {
		d, err := lim.Reserve(ctx, quota.ScopeAPIToken, e.key)
		if err != nil || d.Allowed != (i < 3) {
			t.Fatalf("request %d: %+v %v", i, d, err)
		}
	}
	if n := e.durable(t); n != 0 {
		t.Fatalf("%d units in the ledger", n)
	}
	e.forgetRedis(t)
	if d, err := lim.Reserve(ctx, quota.ScopeAPIToken, e.key); err != nil || !d.Allowed || d.Used != 1 {
		t.Fatalf("after a Redis loss: %+v %v", d, err)
	}
}
