package linktest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/link/internal/cache"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
	"github.com/linkmesh/linkmesh/services/link/internal/store"
)

// The seam changes the stored link and drops every cached copy exactly as the service's own
// code does: its Redis copy, and every gateway's by the broadcast.
func TestSetChangesStoreAndDropsCaches(t *testing.T) {
	ctx := context.Background()
	db, rdb := testenv.Mongo(t), testenv.Redis(t)
	st, err := store.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	code := testenv.Name("seam")
	now := time.Now().UTC().Truncate(time.Millisecond)
	l := links.Link{ID: code, ShortCode: code, DestinationURL: "https://93.184.216.34/", CreatedAt: now, ExpiresAt: now.Add(time.Hour), Status: link.StatusActive}
	if err := st.Insert(ctx, l); err != nil {
		t.Fatal(err)
	}
	c := cache.New(rdb, slog.New(slog.NewTextHandler(io.Discard, nil)))
	_, _, _, version := c.Get(ctx, code)
	c.Put(ctx, code, version, l.Resolved(), true)
	if _, found, cached, _ := c.Get(ctx, code); !found || !cached {
		t.Fatal("setup: the view was not cached")
	}
	sub := rdb.Subscribe(ctx, link.InvalidationChannel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	disabled, past, on := link.StatusDisabled, now.Add(-time.Minute), true
	if err := Set(ctx, db, rdb, code, Change{Status: &disabled, ExpiresAt: &past, AutoRenew: &on, DeletedAt: &now}); err != nil {
		t.Fatal(err)
	}
	got, err := st.FindByCode(ctx, code)
	if err != nil || got.Status != disabled || !got.ExpiresAt.Equal(past) || !got.AutoRenew || got.DeletedAt == nil || !got.DeletedAt.Equal(now) {
		t.Fatalf("stored %+v, %v", got, err)
	}
	if _, _, cached, _ := c.Get(ctx, code); cached {
		t.Fatal("the link service's Redis copy survived")
	}
	select {
	case msg := <-sub.Channel():
		if msg.Payload != code {
			t.Fatalf("broadcast %q, want %q", msg.Payload, code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no invalidation broadcast")
	}
	if err := Set(ctx, db, rdb, "nosuchcode", Change{Status: &disabled}); err == nil {
		t.Fatal("an unknown code was accepted")
	}
}
