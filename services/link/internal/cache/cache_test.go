package cache

import (
	"context"
	"io"
	"log/slog"
	"strings"
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
		ttl := rdb.TTL(ctx, resolvedKey(key)).Val()
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

// A creation invalidates only a code some layer may hold an answer about: one that was
// asked about (a miss marks it before the store is read) or is cached. A code nobody asked
// about costs no write and no broadcast.
func TestCreatedInvalidatesOnlyCodesAskedAbout(t *testing.T) {
	rdb := testenv.Redis(t)
	c := New(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx := context.Background()
	fresh, asked := testenv.Name("f"), testenv.Name("a")
	sub := rdb.Subscribe(ctx, link.InvalidationChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	c.Created(ctx, fresh)
	if n := rdb.Exists(ctx, versionKey(fresh), askedKey(fresh), resolvedKey(fresh)).Val(); n != 0 {
		t.Fatalf("creating a code nobody asked about wrote %d keys", n)
	}

	// A reader misses, reads the store (no such link) and caches the absence.
	_, _, cached, before := c.Get(ctx, asked)
	if cached {
		t.Fatal("empty cache answered")
	}
	if ttl := rdb.PTTL(ctx, askedKey(asked)).Val(); ttl <= link.CacheTTL || ttl > askedTTL {
		t.Fatalf("asked mark TTL %s, want (%s, %s]", ttl, link.CacheTTL, askedTTL)
	}
	c.Put(ctx, asked, before, link.Resolved{}, false)
	c.Created(ctx, asked)
	if _, _, cached, _ := c.Get(ctx, asked); cached {
		t.Fatal("the cached absence survived the creation")
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != asked {
		t.Fatalf("broadcast %v %v, want %s only (nothing for %s)", msg, err, asked, fresh)
	}
	// A reader that read the store before the creation cannot cache its absence after it.
	c.Put(ctx, asked, before, link.Resolved{}, false)
	if _, _, cached, _ := c.Get(ctx, asked); cached {
		t.Fatal("an absence read before the creation was cached after it")
	}
}

// A code's keys share one Redis Cluster slot, so its scripts run on a cluster.
func TestKeysShareASlot(t *testing.T) {
	for _, code := range []string{"abc1234", "Zz-_09"} {
		tags := map[string]bool{}
		for _, k := range []string{resolvedKey(code), versionKey(code), askedKey(code)} {
			open, end := strings.Index(k, "{"), strings.Index(k, "}")
			if open < 0 || end < open {
				t.Fatalf("%s has no hash tag", k)
			}
			tags[k[open+1:end]] = true
		}
		if len(tags) != 1 || !tags[code] {
			t.Fatalf("keys of %s carry tags %v", code, tags)
		}
	}
}
