package redisdb_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/redisdb"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// Three replicas lead in turn on a real Redis: never two at once, and when the leader stops
// another takes over at once (it hands the lease over rather than let it lapse).
func TestOneLeaderAtATime(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Name("leader")
	var working, most, rounds atomic.Int64
	var who sync.Map
	leader := func(name string) redisdb.Leader {
		return redisdb.Leader{Key: key, Redis: rdb, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), What: "test",
			Interval: 10 * time.Millisecond, Work: func(ctx context.Context) error {
				n := working.Add(1)
				defer working.Add(-1)
				if n > most.Load() {
					most.Store(n)
				}
				who.Store(name, true)
				rounds.Add(1)
				time.Sleep(5 * time.Millisecond)
				return nil
			}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	firstCtx, stopFirst := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { leader("a").Run(firstCtx) })
	time.Sleep(200 * time.Millisecond) // a leads
	for _, name := range []string{"b", "c"} {
		wg.Go(func() { leader(name).Run(ctx) })
	}
	time.Sleep(300 * time.Millisecond)
	if _, ok := who.Load("b"); ok {
		t.Fatal("b worked while a held the lease")
	}
	stopFirst()
	deadline := time.Now().Add(2 * time.Second)
	for {
		_, b := who.Load("b")
		_, c := who.Load("c")
		if b || c {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("nobody took over within 2s of the leader stopping")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if most.Load() != 1 || rounds.Load() < 10 {
		t.Fatalf("at most %d at once over %d rounds", most.Load(), rounds.Load())
	}
}
