package store

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// An event is written with its change; the relay finds it by the sparse outbox_at, and its
// clearing is no write of the link (its revision stays, so no concurrent conditional write
// fails). An owned link's expiry owes one link.expired event, found by expiry_due, and a
// renewal owes another.
func TestOutboxAndExpiries(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	created := links.NewEvent(link.EventCreated, now)
	l := links.Link{ID: "o1", ShortCode: "out1234", OwnerID: "u1", DestinationURL: "https://example.com", CreatedAt: now,
		ExpiresAt: now.Add(time.Hour), Status: link.StatusActive, Outbox: []links.Event{created}}
	if err := s.Insert(ctx, l); err != nil {
		t.Fatal(err)
	}
	anon := links.Link{ID: "o2", ShortCode: "out5678", DestinationURL: "https://example.com", CreatedAt: now,
		ExpiresAt: now.Add(-time.Hour), Status: link.StatusActive}
	if err := s.Insert(ctx, anon); err != nil {
		t.Fatal(err)
	}
	due, err := s.OutboxDue(ctx, time.Time{}, now, 10)
	if err != nil || len(due) != 1 || len(due[0].Outbox) != 1 || due[0].Outbox[0] != created {
		t.Fatalf("outbox due: %+v %v", due, err)
	}
	renewed := links.NewEvent(link.EventRenewed, now)
	later := now.Add(2 * time.Hour)
	if err := s.Update(ctx, "out1234", links.Change{ExpiresAt: &later, Event: &renewed}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.FindByID(ctx, "o1")
	if len(got.Outbox) != 2 || got.Outbox[1] != renewed {
		t.Fatalf("outbox after a change: %+v", got.Outbox)
	}
	// An event written after the relay read the outbox stays.
	if err := s.ClearOutboxes(ctx, map[string][]string{"o1": {created.ID}}); err != nil {
		t.Fatal(err)
	}
	if left, _ := s.FindByID(ctx, "o1"); len(left.Outbox) != 1 || left.Outbox[0] != renewed {
		t.Fatalf("after clearing the first event: %+v", left.Outbox)
	}
	if due, _ := s.OutboxDue(ctx, time.Time{}, now, 10); len(due) != 1 {
		t.Fatalf("a link with an event left is no longer due: %+v", due)
	}
	if err := s.ClearOutboxes(ctx, map[string][]string{"o1": {renewed.ID}}); err != nil {
		t.Fatal(err)
	}
	// A second relay clearing the same events (or a link without an outbox) is no error.
	if err := s.ClearOutboxes(ctx, map[string][]string{"o1": {renewed.ID}, "o2": {"evt_x"}}); err != nil {
		t.Fatalf("clearing again: %v", err)
	}
	after, _ := s.FindByID(ctx, "o1")
	if len(after.Outbox) != 0 || after.Rev != got.Rev {
		t.Fatalf("after clearing: outbox %+v, rev %d then %d", after.Outbox, got.Rev, after.Rev)
	}
	if due, _ := s.OutboxDue(ctx, time.Time{}, now.Add(time.Hour), 10); len(due) != 0 {
		t.Fatalf("a cleared outbox is still due: %+v", due)
	}

	// Expiries: only the owned link owes an event, once it has expired, and only once.
	if due, _ := s.ExpiriesDue(ctx, now.Add(time.Hour), 10); len(due) != 0 {
		t.Fatalf("not expired yet, or not owned: %+v", due)
	}
	at := later.Add(time.Second)
	due, _ = s.ExpiriesDue(ctx, at, 10)
	if len(due) != 1 || due[0].ID != "o1" {
		t.Fatalf("expiries due: %+v", due)
	}
	if ok, err := s.MarkExpired(ctx, "o1", at); !ok || err != nil {
		t.Fatalf("mark expired: %v %v", ok, err)
	}
	if ok, _ := s.MarkExpired(ctx, "o1", at); ok {
		t.Fatal("an expiry owes one event")
	}
	got, _ = s.FindByID(ctx, "o1")
	if len(got.Outbox) != 1 || got.Outbox[0].Type != link.EventExpired || got.ExpiredEventFor == nil || !got.ExpiredEventFor.Equal(later) {
		t.Fatalf("after the expiry: %+v", got)
	}
	// Renewed, it owes the next one.
	again := at.Add(time.Hour)
	if err := s.Update(ctx, "out1234", links.Change{ExpiresAt: &again}); err != nil {
		t.Fatal(err)
	}
	if due, _ := s.ExpiriesDue(ctx, again, 10); len(due) != 1 {
		t.Fatalf("a renewed link owes its next expiry: %+v", due)
	}
}

// An owner's change that needs an active link does not touch one disabled meanwhile.
func TestOwnerChangeNeedsTheStatusItRead(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := s.Insert(ctx, links.Link{ID: "s1", ShortCode: "sta1234", OwnerID: "u1", DestinationURL: "https://example.com/a",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), Status: link.StatusDisabled}); err != nil {
		t.Fatal(err)
	}
	dest := "https://example.com/b"
	ok, err := s.UpdateLive(ctx, "sta1234", "u1", links.Change{DestinationURL: &dest, IfStatus: link.StatusActive})
	if err != nil || ok {
		t.Fatalf("a disabled link was edited: %v %v", ok, err)
	}
	if got, _ := s.FindByID(ctx, "s1"); got.DestinationURL != "https://example.com/a" {
		t.Fatalf("destination %q", got.DestinationURL)
	}
}

// Links stored before events existed: an expired one owes none, a live one owes its expiry.
func TestMigrationGivesExpiriesTheirEvents(t *testing.T) {
	ctx := context.Background()
	db := testenv.Mongo(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	docs := []any{
		bson.D{{Key: "_id", Value: "past"}, {Key: "short_code", Value: "mig0001"}, {Key: "owner_id", Value: "u1"}, {Key: "status", Value: "ACTIVE"},
			{Key: "auto_renew", Value: 0}, {Key: "created_at", Value: now}, {Key: "expires_at", Value: now.Add(-time.Hour)}, {Key: "rev", Value: 1}},
		bson.D{{Key: "_id", Value: "future"}, {Key: "short_code", Value: "mig0002"}, {Key: "owner_id", Value: "u1"}, {Key: "status", Value: "ACTIVE"},
			{Key: "auto_renew", Value: 0}, {Key: "created_at", Value: now}, {Key: "expires_at", Value: now.Add(time.Hour)}, {Key: "rev", Value: 1}},
		bson.D{{Key: "_id", Value: "renews"}, {Key: "short_code", Value: "mig0003"}, {Key: "owner_id", Value: "u1"}, {Key: "status", Value: "ACTIVE"},
			{Key: "auto_renew", Value: 1}, {Key: "created_at", Value: now}, {Key: "expires_at", Value: now.Add(time.Hour)}, {Key: "rev", Value: 1}},
	}
	if _, err := db.Collection(collection).InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if due, _ := s.ExpiriesDue(ctx, now.Add(2*time.Hour), 10); len(due) != 1 || due[0].ID != "future" {
		t.Fatalf("expiries due after the migration: %+v", due)
	}
	past, _ := s.FindByID(ctx, "past")
	if past.ExpiredEventFor == nil || !past.ExpiredEventFor.Equal(now.Add(-time.Hour)) {
		t.Fatalf("a link expired before the migration: %+v", past)
	}
}
