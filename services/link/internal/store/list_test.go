package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

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

// An owner's list, counts and dashboard read the links themselves: a link whose expiry is
// changed in the database, by nothing but a direct update, is listed and counted by the
// state it now has.
func TestListsReadTheLinksAsStored(t *testing.T) {
	ctx := context.Background()
	db := testenv.Mongo(t)
	s, err := New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for i, code := range []string{"dbx0001", "dbx0002"} {
		if err := s.Insert(ctx, links.Link{ID: fmt.Sprintf("dbx%d", i), ShortCode: code, OwnerID: "owner", DestinationURL: "https://x.example/",
			CreatedAt: now.Add(-time.Duration(i) * time.Minute), ExpiresAt: now.Add(time.Hour), Status: link.StatusActive}); err != nil {
			t.Fatal(err)
		}
	}
	state := func() (string, string, links.Overview, link.LinkCounts) {
		t.Helper()
		list := func(st string) string {
			ls, _, err := s.List(ctx, links.ListQuery{OwnerID: "owner", State: st, Now: now, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, l := range ls {
				out = append(out, l.ShortCode)
			}
			return fmt.Sprint(out)
		}
		o, err := s.Overview(ctx, links.ListQuery{OwnerID: "owner", Now: now}, 5)
		if err != nil {
			t.Fatal(err)
		}
		c, err := s.CountStates(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		return list(links.StateActive), list(links.StateExpired), o, c
	}
	if active, expired, o, c := state(); active != "[dbx0001 dbx0002]" || expired != "[]" || o.Expired != 0 || c.Active != 2 {
		t.Fatalf("before: active %s, expired %s, overview %+v, counts %+v", active, expired, o, c)
	}
	if _, err := db.Collection(collection).UpdateOne(ctx, bson.D{{Key: "short_code", Value: "dbx0002"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "expires_at", Value: now.Add(-time.Minute)}}}}); err != nil {
		t.Fatal(err)
	}
	active, expired, o, c := state()
	if active != "[dbx0001]" || expired != "[dbx0002]" || o.Total != 2 || o.Expired != 1 || c.Active != 1 || c.Expired != 1 {
		t.Fatalf("after the expiry changed in the database: active %s, expired %s, overview %+v, counts %+v", active, expired, o, c)
	}
}

// The schema steps: a link stored without a revision gets 0 (every write is conditional on
// it), and the collections of derived copies are dropped; running them again changes nothing.
func TestMigrations(t *testing.T) {
	ctx := context.Background()
	db := testenv.Mongo(t)
	if _, err := db.Collection(collection).InsertOne(ctx, bson.D{{Key: "_id", Value: "old"}, {Key: "short_code", Value: "old0001"},
		{Key: "status", Value: link.StatusActive}, {Key: "expires_at", Value: time.Now().Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("link_packs").InsertOne(ctx, bson.D{{Key: "owner_id", Value: "u"}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := New(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := New(ctx, db)
	disabled := link.StatusDisabled
	if err := s.Update(ctx, "old0001", links.Change{Status: &disabled}); err != nil {
		t.Fatalf("a link stored without a revision cannot be changed: %v", err)
	}
	if l, _ := s.FindByCode(ctx, "old0001"); l.Status != disabled || l.Rev != 1 {
		t.Fatalf("after the change: %+v", l)
	}
	if names, _ := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: bson.A{"link_packs", "link_changes", "link_counts"}}}}}); len(names) != 0 {
		t.Fatalf("derived collections left: %v", names)
	}
}
