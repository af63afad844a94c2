package cache

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

func TestRedisCache(t *testing.T) {
	rdb := testenv.Redis(t)
	c := New(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	code, missing := testenv.Name("c"), testenv.Name("m")
	r := link.Resolved{ShortCode: code, DestinationURL: "https://e.com", Status: link.StatusActive,
		ExpiresAt: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}

	if _, _, cached, _ := c.Get(ctx, code); cached {
		t.Fatal("empty cache answered")
	}
	c.Put(ctx, code, "", r, true)
	c.Put(ctx, missing, "", link.Resolved{}, false)
	got, found, cached, _ := c.Get(ctx, code)
	if !cached || !found || got != r {
		t.Fatalf("got %+v %v %v", got, found, cached)
	}
	if _, found, cached, _ := c.Get(ctx, missing); !cached || found {
		t.Fatal("absence not cached")
	}
	// Every copy expires by itself within the contract's bound.
	for key, max := range map[string]time.Duration{code: link.CacheTTL, missing: negativeTTL} {
		ttl := rdb.TTL(ctx, keyPrefix+key).Val()
		if ttl <= 0 || ttl > max {
			t.Fatalf("TTL of %s is %s, want (0, %s]", key, ttl, max)
		}
	}

	sub := rdb.Subscribe(ctx, link.InvalidationChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	_, _, _, before := c.Get(ctx, code) // a reader that saw the store before the change
	c.Invalidate(ctx, code)
	if _, _, cached, _ := c.Get(ctx, code); cached {
		t.Fatal("invalidated entry still cached")
	}
	c.Put(ctx, code, before, r, true)
	if _, _, cached, _ := c.Get(ctx, code); cached {
		t.Fatal("a view read before the invalidation was cached after it")
	}
	_, _, _, after := c.Get(ctx, code)
	c.Put(ctx, code, after, r, true)
	if _, _, cached, _ := c.Get(ctx, code); !cached {
		t.Fatal("a view read after the invalidation was not cached")
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != code {
		t.Fatalf("broadcast %v %v", msg, err)
	}
}
