package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// An owner's list on the real wire server: states as of now, a literal substring, newest
// first with ties in a stable order, paging, and soft-deleted and other owners' links never.
func TestListByOwner(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return now.Add(time.Duration(-min) * time.Minute) }
	deleted := now
	fixtures := []links.Link{
		{ShortCode: "act0001", DestinationURL: "https://a.example/x.*y", CreatedAt: at(1), ExpiresAt: now.Add(time.Hour), Status: link.StatusActive},
		{ShortCode: "exp0001", DestinationURL: "https://b.example/(paren", CreatedAt: at(2), ExpiresAt: now.Add(-time.Hour), Status: link.StatusActive},
		{ShortCode: "ren0001", DestinationURL: `https://c.example/back\slash$`, CreatedAt: at(2), ExpiresAt: now.Add(-time.Hour), Status: link.StatusActive, AutoRenew: true},
		{ShortCode: "dis0001", DestinationURL: "https://d.example/", CreatedAt: at(3), ExpiresAt: now.Add(time.Hour), Status: link.StatusDisabled},
		{ShortCode: "del0001", DestinationURL: "https://e.example/", CreatedAt: at(4), ExpiresAt: now.Add(time.Hour), Status: link.StatusActive, DeletedAt: &deleted},
		{ShortCode: "oth0001", DestinationURL: "https://a.example/x.*y", CreatedAt: at(0), ExpiresAt: now.Add(time.Hour), Status: link.StatusActive, OwnerID: "other"},
	}
	for i, l := range fixtures {
		l.ID = fmt.Sprintf("id%d", i)
		if l.OwnerID == "" {
			l.OwnerID = "owner"
		}
		if err := s.Insert(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	codes := func(q links.ListQuery) ([]string, int64) {
		t.Helper()
		q.OwnerID, q.Now = "owner", now
		if q.Limit == 0 {
			q.Limit = 20
		}
		got, total, err := s.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range got {
			out = append(out, l.ShortCode)
		}
		return out, total
	}
	for _, tc := range []struct {
		q     links.ListQuery
		want  string
		total int64
	}{
		{links.ListQuery{State: links.StateAll}, "[act0001 ren0001 exp0001 dis0001]", 4},
		{links.ListQuery{State: links.StateActive}, "[act0001 ren0001]", 2},
		{links.ListQuery{State: links.StateExpired}, "[exp0001]", 1},
		{links.ListQuery{State: links.StateDisabled}, "[dis0001]", 1},
		{links.ListQuery{State: links.StateAll, Contains: ".*"}, "[act0001]", 1},
		{links.ListQuery{State: links.StateAll, Contains: "("}, "[exp0001]", 1},
		{links.ListQuery{State: links.StateAll, Contains: `\slash$`}, "[ren0001]", 1},
		{links.ListQuery{State: links.StateAll, Contains: "0001"}, "[act0001 ren0001 exp0001 dis0001]", 4},
		{links.ListQuery{State: links.StateActive, Contains: "c.example"}, "[ren0001]", 1},
		{links.ListQuery{State: links.StateAll, Contains: "$where"}, "[]", 0},
		{links.ListQuery{State: links.StateAll, Skip: 1, Limit: 2}, "[ren0001 exp0001]", 4},
		{links.ListQuery{State: links.StateAll, Skip: 1 << 62, Limit: 2}, "[]", 4},
	} {
		got, total := codes(tc.q)
		if fmt.Sprint(got) != tc.want && !(tc.want == "[]" && got == nil) || total != tc.total {
			t.Errorf("%+v: got %v (total %d), want %s (total %d)", tc.q, got, total, tc.want, tc.total)
		}
	}

	// Live updates touch only the owner's live link.
	later := now.Add(48 * time.Hour)
	for _, tc := range []struct {
		code, owner string
		want        bool
	}{{"act0001", "owner", true}, {"act0001", "other", false}, {"del0001", "owner", false}, {"nope", "owner", false}} {
		if ok, err := s.UpdateLive(ctx, tc.code, tc.owner, links.Change{ExpiresAt: &later}); err != nil || ok != tc.want {
			t.Errorf("UpdateLive(%s, %s) = %v, %v; want %v", tc.code, tc.owner, ok, err, tc.want)
		}
	}
	if got, _ := s.FindByCode(ctx, "act0001"); !got.ExpiresAt.Equal(later) {
		t.Fatalf("renewed expiry not stored: %v", got.ExpiresAt)
	}
}

// The auto-renew sweep pushes the expiry of live auto-renewing links that are due, and only
// theirs.
func TestExtendAutoRenewing(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	deleted := now
	for _, l := range []links.Link{
		{ID: "1", ShortCode: "due0001", AutoRenew: true, ExpiresAt: now.Add(-time.Hour)},
		{ID: "2", ShortCode: "soon001", AutoRenew: true, ExpiresAt: now.Add(time.Hour)},
		{ID: "3", ShortCode: "far0001", AutoRenew: true, ExpiresAt: now.Add(72 * time.Hour)},
		{ID: "4", ShortCode: "plain01", ExpiresAt: now.Add(-time.Hour)},
		{ID: "5", ShortCode: "gone001", AutoRenew: true, ExpiresAt: now.Add(-time.Hour), DeletedAt: &deleted},
	} {
		l.Status, l.CreatedAt = link.StatusActive, now.Add(-time.Hour)
		if err := s.Insert(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.ExtendAutoRenewing(ctx, now, 24*time.Hour, 30*24*time.Hour)
	if err != nil || n != 2 {
		t.Fatalf("extended %d, %v; want the 2 due", n, err)
	}
	for code, want := range map[string]time.Time{"due0001": now.AddDate(0, 0, 30), "soon001": now.AddDate(0, 0, 30),
		"far0001": now.Add(72 * time.Hour), "plain01": now.Add(-time.Hour), "gone001": now.Add(-time.Hour)} {
		if l, _ := s.FindByCode(ctx, code); !l.ExpiresAt.Equal(want) {
			t.Errorf("%s expires %v, want %v", code, l.ExpiresAt, want)
		}
	}
}
