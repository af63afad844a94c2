package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// The moderators' side on the real wire server: everyone's list with and without soft-deleted
// links, counts by state, an owner's links disabled at once, and a permanent deletion's mark
// (kept once, soft-deleting, due for the sweeper) and its end.
func TestAdminQueries(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	deleted := now
	fixtures := []links.Link{
		{ShortCode: "adm0001", OwnerID: "u1", ExpiresAt: now.Add(time.Hour), Status: link.StatusActive},
		{ShortCode: "adm0002", OwnerID: "u1", ExpiresAt: now.Add(-time.Hour), Status: link.StatusActive},
		{ShortCode: "adm0003", OwnerID: "u2", ExpiresAt: now.Add(time.Hour), Status: link.StatusDisabled},
		{ShortCode: "adm0004", OwnerID: "u1", ExpiresAt: now.Add(time.Hour), Status: link.StatusActive, DeletedAt: &deleted},
		{ShortCode: "adm0005", ExpiresAt: now.Add(time.Hour), Status: link.StatusActive},
	}
	for i, l := range fixtures {
		l.ID, l.DestinationURL, l.CreatedAt = fmt.Sprintf("aid%d", i), "https://x.example/", now.Add(-time.Duration(i)*time.Minute)
		if err := s.Insert(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	codes := func(ls []links.Link) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.ShortCode)
		}
		return out
	}
	all, total, err := s.List(ctx, links.ListQuery{AnyOwner: true, State: links.StateAll, Now: now, Limit: 10})
	if err != nil || total != 4 || fmt.Sprint(codes(all)) != "[adm0001 adm0002 adm0003 adm0005]" {
		t.Fatalf("everyone's live links: %v (%d), %v", codes(all), total, err)
	}
	withDeleted, total, _ := s.List(ctx, links.ListQuery{AnyOwner: true, IncludeDeleted: true, State: links.StateAll, Now: now, Limit: 10})
	if total != 5 || len(withDeleted) != 5 {
		t.Fatalf("with soft-deleted: %v (%d)", codes(withDeleted), total)
	}
	counts, err := s.CountStates(ctx, now)
	if err != nil || counts != (link.LinkCounts{Total: 5, Active: 2, Expired: 1, Disabled: 1, Deleted: 1}) {
		t.Fatalf("counts %+v, %v", counts, err)
	}

	disabled, err := s.DisableOwner(ctx, "u1", nil, time.Now())
	var off []string
	for _, l := range disabled {
		off = append(off, l.ShortCode)
		if len(l.Outbox) != 1 || l.Outbox[0].Type != link.EventDisabled {
			t.Fatalf("a disabled link's outbox: %+v", l.Outbox)
		}
	}
	slices.Sort(off)
	if err != nil || fmt.Sprint(off) != "[adm0001 adm0002]" {
		t.Fatalf("disabled %v, %v", off, err)
	}
	if again, _ := s.DisableOwner(ctx, "u1", nil, time.Now()); len(again) != 0 {
		t.Fatalf("disabled again: %v", again)
	}

	mark := links.PurgeMark{By: "m1", Role: "moderator", At: now}
	got, err := s.MarkPurge(ctx, "aid0", mark)
	if err != nil || got.By != "m1" {
		t.Fatalf("mark %+v, %v", got, err)
	}
	if got, _ := s.MarkPurge(ctx, "aid0", links.PurgeMark{By: "m2", At: now.Add(time.Minute)}); got.By != "m1" {
		t.Fatalf("a second mark replaced the first: %+v", got)
	}
	l, _ := s.FindByCode(ctx, "adm0001")
	if l.Purge == nil || l.DeletedAt == nil {
		t.Fatalf("marked link %+v", l)
	}
	if _, total, _ := s.List(ctx, links.ListQuery{AnyOwner: true, IncludeDeleted: true, State: links.StateAll, Now: now, Limit: 10}); total != 4 {
		t.Fatalf("a link being deleted is listed: %d", total)
	}
	if due, _ := s.PurgesDue(ctx, now, 10); len(due) != 0 {
		t.Fatalf("due before its time: %v", codes(due))
	}
	due, err := s.PurgesDue(ctx, now.Add(time.Second), 10)
	if err != nil || fmt.Sprint(codes(due)) != "[adm0001]" {
		t.Fatalf("due %v, %v", codes(due), err)
	}
	if err := s.DeleteByID(ctx, "aid1"); err != nil { // not marked: stays
		t.Fatal(err)
	}
	for range 2 {
		if err := s.DeleteByID(ctx, "aid0"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.FindByCode(ctx, "adm0001"); !errors.Is(err, links.ErrNotFound) {
		t.Fatalf("deleted link: %v", err)
	}
	if _, err := s.FindByCode(ctx, "adm0002"); err != nil {
		t.Fatalf("an unmarked link was deleted: %v", err)
	}
	if _, err := s.MarkPurge(ctx, "aid0", mark); !errors.Is(err, links.ErrNotFound) {
		t.Fatalf("marking a gone link: %v", err)
	}
}
