package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// An entry keeps everything an owner's view shows of a link, and a damaged one is an error,
// never a panic or a wrong link.
func TestEntryRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 123e6, time.UTC)
	deleted := at.Add(time.Hour)
	for _, l := range []links.Link{
		{ID: "id1", ShortCode: "abc1234", DestinationURL: "https://example.com/ä?q=\"x\" y\n", OwnerID: "o", CreatedAt: at,
			ExpiresAt: at.AddDate(0, 0, 30), Status: link.StatusActive, Rev: 1},
		{ID: "id2", ShortCode: "x", DestinationURL: "", OwnerID: "o", CreatedAt: at, ExpiresAt: at.AddDate(-60, 0, 0),
			Status: link.StatusDisabled, AutoRenew: true, DeletedAt: &deleted, Rev: 1 << 40},
		{ID: "id3", ShortCode: "gone001", OwnerID: "o", CreatedAt: at, ExpiresAt: at, Status: "custom", Rev: 7,
			Purge: &links.PurgeMark{By: "m"}},
	} {
		b := appendEntry(nil, l)
		got, rest, err := readEntry(string(append(b, 9)), "o")
		if err != nil || rest != "\x09" {
			t.Fatalf("%s: read %v, rest %v", l.ID, err, rest)
		}
		want := l
		if l.Purge != nil {
			want.Purge = goneMark // a mark keeps that the link is purged, not who asked
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read back %+v, want %+v", l.ID, got, want)
		}
		for n := range len(b) {
			if _, _, err := readEntry(string(b[:n]), "o"); err == nil {
				t.Errorf("%s: %d of %d bytes read without an error", l.ID, n, len(b))
			}
		}
	}
}

// oracle is q's page and total the slow way: the query over every link.
func oracle(t *testing.T, s *Store, q links.ListQuery) ([]string, int64) {
	t.Helper()
	docs, total, err := mongodb.FindPage[doc](context.Background(), s.links, "links", listFilter(q), mongodb.NewestFirst(), q.Skip, q.Limit)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, d := range docs {
		out = append(out, d.ShortCode)
	}
	return out, total
}

// sameAsQuery checks that s answers owner's lists, counts and overview from the packs as
// the query over the links does.
func sameAsQuery(t *testing.T, s *Store, owner string, now time.Time, when string) {
	t.Helper()
	ctx := context.Background()
	if _, ok, err := s.ownerLinks(ctx, owner); !ok || err != nil {
		t.Fatalf("%s: packs not used (%v)", when, err)
	}
	for _, state := range []string{links.StateAll, links.StateActive, links.StateExpired, links.StateDisabled} {
		for _, contains := range []string{"", "7", ".*", "(", `\$`, "nothing"} {
			for _, p := range [][2]int64{{20, 20}, {100, 7}, {0, 1000}} {
				q := links.ListQuery{OwnerID: owner, State: state, Contains: contains, Now: now, Skip: p[0], Limit: p[1]}
				got, total, err := s.List(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				codes := []string{}
				for _, l := range got {
					codes = append(codes, l.ShortCode)
				}
				want, wantTotal := oracle(t, s, q)
				if fmt.Sprint(codes) != fmt.Sprint(want) || total != wantTotal {
					t.Fatalf("%s: %s %q %v: packs %v (%d), query %v (%d)", when, state, contains, p, codes, total, want, wantTotal)
				}
			}
		}
	}
	o, err := s.Overview(ctx, links.ListQuery{OwnerID: owner, Now: now}, 5)
	if err != nil {
		t.Fatal(err)
	}
	var want links.Overview
	for _, c := range []struct {
		state string
		into  *int64
	}{{links.StateAll, &want.Total}, {links.StateExpired, &want.Expired}, {links.StateDisabled, &want.Disabled}} {
		_, *c.into = oracle(t, s, links.ListQuery{OwnerID: owner, State: c.state, Now: now})
	}
	newest, _ := oracle(t, s, links.ListQuery{OwnerID: owner, State: links.StateAll, Now: now, Limit: 5})
	var got []string
	for _, l := range o.Newest {
		got = append(got, l.ShortCode)
	}
	if o.Total != want.Total || o.Expired != want.Expired || o.Disabled != want.Disabled || fmt.Sprint(got) != fmt.Sprint(newest) {
		t.Fatalf("%s: overview %d/%d/%d %v, query %d/%d/%d %v", when, o.Total, o.Expired, o.Disabled, got,
			want.Total, want.Expired, want.Disabled, newest)
	}
}

// An owner's views from the packs on the real wire server answer as the query over the links
// does: before the fold (the owner's changes over the packs) and after it, across packs,
// through renewals, disables, deletions and purges, with a batch packed twice and changes
// arriving late, and for links stored before the packs existed.
func TestOwnerPacks(t *testing.T) {
	ctx := context.Background()
	db := testenv.Mongo(t)
	defer func(n int) { packSize = n }(packSize)
	packSize = 64
	s, err := New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	// Links from before the packs: stored without recorded changes.
	var old []any
	for i := range 30 {
		l := links.Link{ID: fmt.Sprintf("old%d", i), ShortCode: fmt.Sprintf("old%04d", i), OwnerID: "owner",
			DestinationURL: fmt.Sprintf("https://example/%d(\\$", i), CreatedAt: now.Add(-time.Duration(i) * time.Hour),
			ExpiresAt: now.Add(time.Duration(i-10) * time.Hour), Status: link.StatusActive}
		old = append(old, toDoc(l))
	}
	if _, err := s.links.InsertMany(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	sameAsQuery(t, s, "owner", now, "links from before the packs")

	// More than a pack's worth, with equal creation times (ties in id order), and another
	// owner's links, which never show.
	var ls []links.Link
	for i := range 2*packSize + 30 {
		ls = append(ls, links.Link{ID: fmt.Sprintf("n%05d", i), ShortCode: fmt.Sprintf("new%05d", i), OwnerID: "owner",
			DestinationURL: fmt.Sprintf("https://example/%d.*", i), CreatedAt: now.Add(-time.Duration(i/3) * time.Minute),
			ExpiresAt: now.Add(time.Duration(i%7-3) * time.Hour), Status: link.StatusActive, AutoRenew: i%11 == 0})
	}
	for i := range 40 {
		ls = append(ls, links.Link{ID: fmt.Sprintf("x%d", i), ShortCode: fmt.Sprintf("oth%04d", i), OwnerID: "other",
			DestinationURL: "https://example/1", CreatedAt: now, ExpiresAt: now.Add(time.Hour), Status: link.StatusActive})
	}
	if err := s.InsertMany(ctx, ls); err != nil {
		t.Fatal(err)
	}
	sameAsQuery(t, s, "owner", now, "before the fold")
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.changes.CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("%d changes left after the fold", n)
	}
	if n, _ := s.packs.CountDocuments(ctx, bson.D{{Key: "owner_id", Value: "owner"}}); n != 3 {
		t.Fatalf("owner has %d packs, want 3", n)
	}
	sameAsQuery(t, s, "owner", now, "after the fold")
	sameAsQuery(t, s, "other", now, "the other owner")

	// Writes of every kind, seen before and after their fold.
	later := now.Add(72 * time.Hour)
	on, disabled, reason := true, link.StatusDisabled, "spam"
	if ok, err := s.UpdateLive(ctx, "new00004", "owner", links.Change{ExpiresAt: &later}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := s.UpdateLive(ctx, "old0020", "owner", links.Change{DeletedAt: &now}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, ok, err := s.UpdateIf(ctx, "new00010", link.StatusActive, links.Change{Status: &disabled, DisabledReason: &reason}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := s.Update(ctx, "new00100", links.Change{AutoRenew: &on}); err != nil {
		t.Fatal(err)
	}
	purged, err := s.FindByCode(ctx, "new00001")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkPurge(ctx, purged.ID, links.PurgeMark{By: "m", At: now}); err != nil {
		t.Fatal(err)
	}
	sameAsQuery(t, s, "owner", now, "writes before their fold")
	// A crash after the packs were written and before the changes were deleted: the batch is
	// packed again.
	var cs []changeDoc
	cur, err := s.changes.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &cs); err != nil || len(cs) != 5 {
		t.Fatalf("%d changes recorded (%v), want 5", len(cs), err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.packChanges(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteByID(ctx, purged.ID); err != nil {
		t.Fatal(err)
	}
	sameAsQuery(t, s, "owner", now, "writes after their fold, packed twice")
	// Changes settled late, older than what the packs hold, undo nothing: not the renewal,
	// and not the purge.
	var late []changeDoc
	for _, l := range []links.Link{purged, ls[4]} {
		l.Rev = 1
		late = append(late, s.changeOf(l, links.ClassNone))
	}
	if _, err := s.packChanges(ctx, late); err != nil {
		t.Fatal(err)
	}
	sameAsQuery(t, s, "owner", now, "late changes")
	// A batch a crash left, tagged and never added: packed from the changes read again.
	if ok, err := s.UpdateLive(ctx, "new00005", "owner", links.Change{ExpiresAt: &later}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := s.changes.UpdateMany(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "batch", Value: "b1"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.counts.InsertOne(ctx, bson.D{{Key: "_id", Value: countsWAL}, {Key: "id", Value: "b1"},
		{Key: "all", Value: bson.D{}}, {Key: "days", Value: bson.D{}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.changes.CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("%d changes left after the batch was finished", n)
	}
	sameAsQuery(t, s, "owner", now, "a batch read again")

	// A second folder that wrote a pack meanwhile fails the round rather than lose its write.
	ps, err := s.readPacks(ctx, "owner")
	if err != nil {
		t.Fatal(err)
	}
	ps[0].dirty = true
	if err := s.writePacks(ctx, ps[:1]); err != nil {
		t.Fatal(err)
	}
	ps[0].doc.V--
	if err := s.writePacks(ctx, ps[:1]); err == nil {
		t.Fatal("a pack written at a stale version")
	}

	// Packing from the links again (the packs dropped) gives the same answers, on a store
	// that has not seen them ready.
	if _, err := s.counts.DeleteOne(ctx, bson.D{{Key: "_id", Value: packsReady}}); err != nil {
		t.Fatal(err)
	}
	again, err := New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := again.ownerLinks(ctx, "owner"); ok || err != nil {
		t.Fatalf("packs used before they are made: %v %v", ok, err)
	}
	if err := again.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	sameAsQuery(t, again, "owner", now, "packed again from the links")

	// A link created again under a purged link's ID (the same Idempotency-Key) is newer than
	// the purge's mark, before and after its fold.
	reborn := purged
	reborn.CreatedAt, reborn.Purge, reborn.DeletedAt, reborn.ShortCode = now.Add(time.Minute), nil, nil, "reborn1"
	gone := purged
	gone.Rev, gone.Purge, gone.DeletedAt = 5, &links.PurgeMark{By: "m"}, &now
	if _, err := again.packChanges(ctx, []changeDoc{again.changeOf(gone, links.ClassNone)}); err != nil {
		t.Fatal(err)
	}
	if err := again.Insert(ctx, reborn); err != nil {
		t.Fatal(err)
	}
	sameAsQuery(t, again, "owner", now, "a link created again, before its fold")
	if err := again.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	sameAsQuery(t, again, "owner", now, "a link created again, after its fold")
	if got, _, _ := again.List(ctx, links.ListQuery{OwnerID: "owner", State: links.StateAll, Now: now, Contains: "reborn1", Limit: 5}); len(got) != 1 {
		t.Fatalf("the link created again is listed %d times", len(got))
	}
}

// An earlier version of the service, in a rolling update or after a rollback, records changes
// without entries, and folds batches without packing them: the next fold makes the packs
// again, and views read the links meanwhile.
func TestPacksMadeAgainAfterAnEarlierVersion(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	var ls []links.Link
	for i := range 30 {
		ls = append(ls, links.Link{ID: fmt.Sprintf("l%d", i), ShortCode: fmt.Sprintf("code%03d", i), OwnerID: "owner",
			DestinationURL: "https://example/", CreatedAt: now.Add(-time.Duration(i) * time.Minute), ExpiresAt: now.Add(time.Hour),
			Status: link.StatusActive})
	}
	if err := s.InsertMany(ctx, ls); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	gen := func() string {
		m, ok, err := s.readMarker(ctx)
		if err != nil || !ok {
			t.Fatalf("no packs marker (%v)", err)
		}
		return m.Gen
	}
	first := gen()
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	if gen() != first {
		t.Fatal("packs made again with nothing to make them again for")
	}

	// An earlier version deletes a link softly: its write and its change, without an entry.
	if _, err := s.links.UpdateOne(ctx, bson.D{{Key: "_id", Value: "l3"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "deleted_at", Value: now}, {Key: "rev", Value: 2}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.changes.InsertOne(ctx, bson.D{{Key: "_id", Value: "l3:2"}, {Key: "link_id", Value: "l3"}, {Key: "rev", Value: 2},
		{Key: "from", Value: "exp:1"}, {Key: "to", Value: links.ClassDeleted}, {Key: "at", Value: now}, {Key: "done", Value: true}}); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.ownerLinks(ctx, "owner"); ok || err != nil {
		t.Fatalf("packs used after a change without an entry was folded: %v %v", ok, err)
	}
	if got, total, err := s.List(ctx, links.ListQuery{OwnerID: "owner", State: links.StateAll, Now: now, Limit: 50}); err != nil || total != 29 || len(got) != 29 {
		t.Fatalf("listed %d of %d (%v) from the links, want 29", len(got), total, err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	second := gen()
	if second == first {
		t.Fatal("packs not made again")
	}
	sameAsQuery(t, s, "owner", now, "made again after a change without an entry")

	// An earlier version's folder adds a batch of its own (an enable it recorded itself).
	if _, err := s.links.UpdateOne(ctx, bson.D{{Key: "_id", Value: "l4"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: link.StatusDisabled}, {Key: "rev", Value: 2}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.counts.UpdateOne(ctx, bson.D{{Key: "_id", Value: countsAll}}, bson.D{{Key: "$set", Value: bson.D{{Key: "batch", Value: "earlier"}}}}); err != nil {
		t.Fatal(err)
	}
	// Views read the links at once, before this version's next fold.
	if _, ok, err := s.ownerLinks(ctx, "owner"); ok || err != nil {
		t.Fatalf("packs used after a batch they do not hold: %v %v", ok, err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	if gen() == second {
		t.Fatal("packs not made again after a batch they do not hold")
	}
	sameAsQuery(t, s, "owner", now, "made again after a batch of an earlier version")
	if o, err := s.Overview(ctx, links.ListQuery{OwnerID: "owner", Now: now}, 5); err != nil || o.Disabled != 1 || o.Total != 29 {
		t.Fatalf("overview %+v, %v; want 29 links, 1 disabled", o, err)
	}
}

// The string varint readers read what encoding/binary reads, overflow and truncation included.
func TestVarintOverString(t *testing.T) {
	inputs := [][]byte{{}, {0x80}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}}
	for _, v := range []int64{0, 1, -1, 63, -64, 1 << 40, -(1 << 62), math.MaxInt64, math.MinInt64} {
		inputs = append(inputs, binary.AppendVarint(nil, v), binary.AppendUvarint(nil, uint64(v)))
	}
	for _, b := range inputs {
		if x, n := uvarint(string(b)); x != first(binary.Uvarint(b)) || n != second(binary.Uvarint(b)) {
			t.Errorf("uvarint(%x) = %d, %d", b, x, n)
		}
		if x, n := varint(string(b)); x != first(binary.Varint(b)) || n != second(binary.Varint(b)) {
			t.Errorf("varint(%x) = %d, %d", b, x, n)
		}
	}
}

func first[T any](v T, _ int) T    { return v }
func second[T any](_ T, n int) int { return n }

// What this version cannot read never stops the fold or fails a view: a change whose entry
// it cannot read makes the packs again, a pack it cannot read sends views to the links; and a
// write settled after its link was purged comes back as a purge mark, even into packs made
// again since the purge.
func TestPacksHealFromWhatTheyCannotRead(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	l := links.Link{ID: "p1", ShortCode: "purged1", OwnerID: "owner", DestinationURL: "https://example/", CreatedAt: now,
		ExpiresAt: now.Add(time.Hour), Status: link.StatusActive}
	keep := l
	keep.ID, keep.ShortCode = "k1", "kept001"
	if err := s.InsertMany(ctx, []links.Link{l, keep}); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	gen := func() string {
		m, _, err := s.readMarker(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m.Gen
	}
	first := gen()

	// A change with an entry of an unknown format.
	owner := "owner"
	bad := changeDoc{ID: "k1:9", LinkID: "k1", Rev: 9, From: "exp:1", To: "exp:1", At: now, Done: true, OwnerID: &owner, Entry: []byte{99, 1, 2}}
	if _, err := s.changes.InsertOne(ctx, bad); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.FoldCounts(ctx, now); err != nil {
			t.Fatalf("the fold stopped on an entry it cannot read: %v", err)
		}
	}
	if g := gen(); g == "" || g == first {
		t.Fatalf("packs not made again after an entry it cannot read (gen %q, was %q)", g, first)
	}
	sameAsQuery(t, s, "owner", now, "after an unreadable entry")

	// A pack it cannot read.
	if _, err := s.packs.UpdateMany(ctx, bson.D{{Key: "owner_id", Value: "owner"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "data", Value: []byte("not zstd")}}}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.ownerLinks(ctx, "owner"); ok || err != nil {
		t.Fatalf("a pack it cannot read: %v %v; want the links read instead", ok, err)
	}
	if got, total, err := s.List(ctx, links.ListQuery{OwnerID: "owner", State: links.StateAll, Now: now, Limit: 5}); err != nil || total != 2 || len(got) != 2 {
		t.Fatalf("listed %d of %d (%v), want 2", len(got), total, err)
	}
	if err := s.dropMarker(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}

	// A write of p1 whose mark as done was lost, then p1 purged and deleted, then the packs
	// made again (the purge's mark with them is gone): once the write is settled, p1 stays out.
	stale := l
	stale.Rev, stale.ExpiresAt = 2, now.Add(48*time.Hour)
	c := s.changeOf(stale, l.Class())
	if _, err := s.changes.InsertOne(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.links.UpdateOne(ctx, bson.D{{Key: "_id", Value: "p1"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "rev", Value: 2}, {Key: "expires_at", Value: stale.ExpiresAt}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkPurge(ctx, "p1", links.PurgeMark{By: "m", At: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteByID(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if err := s.dropMarker(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldCounts(ctx, now); err != nil { // made again: no mark of p1
		t.Fatal(err)
	}
	if err := s.FoldCounts(ctx, now.Add(2*changeLease)); err != nil { // settles and folds the write
		t.Fatal(err)
	}
	if n, _ := s.changes.CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("%d changes left", n)
	}
	sameAsQuery(t, s, "owner", now, "a write settled after its link's purge")
	if got, total, err := s.List(ctx, links.ListQuery{OwnerID: "owner", State: links.StateAll, Now: now, Limit: 5}); err != nil || total != 1 || len(got) != 1 || got[0].ID != "k1" {
		t.Fatalf("listed %v (total %d, %v), want k1 alone", got, total, err)
	}
}
