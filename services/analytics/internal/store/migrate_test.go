package store

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// A database the slot fold wrote, stopped in the middle of slot 5 (the link's rollups hold
// it, the owner's and the global total do not) with slot 6 not folded and a purge not yet
// settled, moves to batches with every click counted once.
func TestMigrateFromSlots(t *testing.T) {
	db := testenv.Mongo(t)
	ctx := context.Background()
	day := Day(day0)
	insert := func(coll string, docs ...bson.D) {
		for _, d := range docs {
			if _, err := db.Collection(coll).InsertOne(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	insert("analytics_state", bson.D{{Key: "_id", Value: "fold"}, {Key: "next_slot", Value: int64(5)}})
	insert("link_daily", bson.D{{Key: "_id", Value: "L1|" + day}, {Key: "link_id", Value: "L1"}, {Key: "owner_id", Value: "O1"}, {Key: "day", Value: day},
		{Key: "month", Value: day[:7]}, {Key: "clicks", Value: int64(3)}, {Key: "unique_visitors", Value: int64(2)},
		{Key: "countries", Value: bson.D{{Key: "GB", Value: int64(3)}}}, {Key: "last_slot", Value: int64(5)}})
	insert("link_monthly", bson.D{{Key: "_id", Value: "L1|" + day[:7]}, {Key: "link_id", Value: "L1"}, {Key: "owner_id", Value: "O1"}, {Key: "month", Value: day[:7]},
		{Key: "year", Value: day[:4]}, {Key: "clicks", Value: int64(3)}, {Key: "unique_visitors", Value: int64(2)},
		{Key: "days", Value: bson.D{{Key: day[8:], Value: int64(3)}}}, {Key: "visitors", Value: bson.D{{Key: day[8:], Value: int64(2)}}},
		{Key: "countries", Value: bson.D{{Key: "GB", Value: int64(3)}}}, {Key: "last_slot", Value: int64(5)}})
	insert("link_totals", bson.D{{Key: "_id", Value: "L1"}, {Key: "owner_id", Value: "O1"}, {Key: "clicks", Value: int64(3)}, {Key: "last_slot", Value: int64(5)}},
		bson.D{{Key: "_id", Value: "LP"}, {Key: "owner_id", Value: "O1"}, {Key: "clicks", Value: int64(7)}, {Key: "last_slot", Value: int64(3)}})
	insert("owner_totals", bson.D{{Key: "_id", Value: "O1"}, {Key: "clicks", Value: int64(9)}, {Key: "last_slot", Value: int64(4)}})
	insert("global_totals", bson.D{{Key: "_id", Value: "all"}, {Key: "clicks", Value: int64(9)}, {Key: "last_slot", Value: int64(4)}})
	insert("purged_links", bson.D{{Key: "_id", Value: "LP"}, {Key: "applied", Value: 0}, {Key: "at", Value: day0}})
	old := func(id string, slot int64, country string) bson.D {
		return bson.D{{Key: "_id", Value: id}, {Key: "link_id", Value: "L1"}, {Key: "owner_id", Value: "O1"}, {Key: "clicked_at", Value: day0},
			{Key: "day", Value: day}, {Key: "country", Value: country}, {Key: "referrer", Value: "direct"}, {Key: "device_type", Value: "desktop"},
			{Key: "browser", Value: "Firefox"}, {Key: "os", Value: "Linux"}, {Key: "slot", Value: slot}}
	}
	insert(Clicks, old("c0", 3, "GB"), old("c1", 5, "GB"), old("c2", 6, "DE"))
	visitor := func(hash string, slot int64) bson.D {
		return bson.D{{Key: "_id", Value: "L1|" + day + "|" + hash}, {Key: "link_id", Value: "L1"}, {Key: "day", Value: day}, {Key: "slot", Value: slot}}
	}
	insert(Visitors, visitor("v0", 3), visitor("v1", 5), visitor("v2", 6))

	s, err := New(ctx, db, retention)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(ctx, db, retention); err != nil { // another replica
		t.Fatal(err)
	}
	if err := s.fromSlots(ctx, db); err != nil { // the step run again
		t.Fatal(err)
	}
	if err := s.Settle(ctx, day0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	count(t, s, []analytics.Click{click("c3", "L1", "O1", day0, "DE", "direct", "v2")}, day0) // v2 met again
	got, err := s.LinkAnalytics(ctx, "L1", "abc", day0, day0)
	if err != nil || got.TotalClicks != 4+1 || got.UniqueVisitors != 3 || len(got.Countries) != 2 || got.Countries[0] != (analytics.Share{Value: "GB", Clicks: 3}) {
		t.Fatalf("answer %+v (%v); want 5 clicks, 3 visitors, GB 3 DE 2", got, err)
	}
	counts, _ := s.Counts(ctx, "O1", []string{"L1", "LP"})
	tot, _ := s.Totals(ctx, day0)
	if counts.Owner != 5 || counts.Links["L1"] != 5 || counts.Links["LP"] != 0 || tot.Total != 5 {
		t.Fatalf("counts %+v, totals %+v; want 5 everywhere", counts, tot)
	}
	for _, coll := range []string{Clicks, Visitors} {
		if n, _ := db.Collection(coll).CountDocuments(ctx, bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: "slot", Value: bson.D{{Key: "$exists", Value: true}}}}, bson.D{{Key: "expires_at", Value: bson.D{{Key: "$exists", Value: false}}}}}}}); n != 0 {
			t.Fatalf("%d documents of %s without expiry or with a slot", n, coll)
		}
	}
	names, _ := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: bson.D{{Key: "$in", Value: bson.A{"link_daily", "analytics_state", "global_totals"}}}}})
	if len(names) != 0 {
		t.Fatalf("left: %v", names)
	}
}
