package mongodb

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

func TestSweeperSweepsUntilStopped(t *testing.T) {
	var calls atomic.Int32
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	sw := Sweeper{What: "things", Interval: 5 * time.Millisecond, Now: func() time.Time { return now },
		Logger: slog.New(slog.DiscardHandler),
		Delete: func(_ context.Context, at time.Time) (int64, error) {
			if !at.Equal(now) {
				t.Errorf("swept at %s, want the clock's %s", at, now)
			}
			if calls.Add(1) == 2 {
				return 0, errors.New("a failure must not stop the sweeper")
			}
			return 1, nil
		}}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { sw.Run(ctx); close(stopped) }()
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("swept %d times in 5s", calls.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the sweeper did not stop")
	}
}
