package redirect

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// A change published by any link replica drops the entry here well within a second.
func TestInvalidationOverRealRedis(t *testing.T) {
	rdb := testenv.Redis(t)
	res := &fakeResolver{links: map[string]link.Resolved{"chg": {DestinationURL: "https://one.example", ExpiresAt: now.Add(time.Hour)}}}
	c := NewCache(10, res)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Subscribe(ctx, rdb, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup(ctx, "chg", time.Now()); err != nil {
		t.Fatal(err)
	}
	res.mu.Lock()
	res.links["chg"] = link.Resolved{DestinationURL: "https://two.example", ExpiresAt: now.Add(time.Hour)}
	res.mu.Unlock()

	start := time.Now()
	if err := rdb.Publish(ctx, link.InvalidationChannel, "chg").Err(); err != nil {
		t.Fatal(err)
	}
	for c.Len() != 0 {
		if time.Since(start) > time.Second {
			t.Fatal("entry still cached 1s after the broadcast")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if e, _ := c.Lookup(ctx, "chg", time.Now()); e.DestinationURL != "https://two.example" {
		t.Fatalf("stale destination %q", e.DestinationURL)
	}
}
