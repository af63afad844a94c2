package store

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

func TestSweeperSweepsUntilStopped(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for key, exp := range map[string]time.Time{"gone": time.Now().Add(-time.Second), "kept": time.Now().Add(time.Hour)} {
		b := bucket(key, minute)
		b.ExpiresAt = exp
		if err := s.Add(ctx, b, 1); err != nil {
			t.Fatal(err)
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	sw := Sweeper{Store: s, Interval: 20 * time.Millisecond, Now: time.Now, Logger: slog.New(slog.DiscardHandler)}
	go func() { sw.Run(runCtx); close(stopped) }()

	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := s.Buckets(ctx, "anonymous_create", "gone", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweeper did not delete the expired bucket")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the sweeper did not stop")
	}
	if got, err := s.Buckets(ctx, "anonymous_create", "kept", time.Time{}); err != nil || len(got) != 1 {
		t.Fatalf("live bucket: %v, %v; want kept", got, err)
	}
}
