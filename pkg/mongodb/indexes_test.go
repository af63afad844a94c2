package mongodb_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// An index another version made on the same keys or name with other options (a plain index
// where a TTL one is wanted; a plain one where a unique one is wanted, or the reverse) is
// replaced, not a start-up failure; ensuring the wanted set again changes nothing.
func TestEnsureIndexesReplacesConflictingIndexes(t *testing.T) {
	db := testenv.Mongo(t)
	ctx := context.Background()
	coll := db.Collection("things")
	for _, m := range []mongo.IndexModel{
		{Keys: bson.D{{Key: "expires_at", Value: 1}}, Options: options.Index().SetName("expires_at")},
		{Keys: bson.D{{Key: "sub", Value: 1}}, Options: options.Index().SetName("sub")},
		{Keys: bson.D{{Key: "owner", Value: 1}, {Key: "at", Value: -1}}, Options: options.Index().SetName("owner_at").SetUnique(true)},
	} {
		if _, err := coll.Indexes().CreateOne(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	want := []mongodb.Index{
		{Collection: "things", Model: mongo.IndexModel{Keys: bson.D{{Key: "expires_at", Value: 1}},
			Options: options.Index().SetName("expires_at_ttl").SetExpireAfterSeconds(0)}},
		{Collection: "things", Model: mongo.IndexModel{Keys: bson.D{{Key: "sub", Value: 1}},
			Options: options.Index().SetName("sub_unique").SetUnique(true).SetSparse(true)}},
		{Collection: "things", Model: mongo.IndexModel{Keys: bson.D{{Key: "owner", Value: 1}, {Key: "at", Value: -1}},
			Options: options.Index().SetName("owner_at")}},
	}
	for range 2 {
		if err := mongodb.EnsureIndexes(ctx, db, want...); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := coll.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Name   string `bson:"name"`
		TTL    *int32 `bson:"expireAfterSeconds"`
		Unique bool   `bson:"unique"`
	}
	if err := cur.All(ctx, &got); err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for i, ix := range got {
		byName[ix.Name] = i
	}
	if len(got) != 4 {
		t.Fatalf("indexes %+v, want _id_ and the three wanted", got)
	}
	if i, ok := byName["expires_at_ttl"]; !ok || got[i].TTL == nil || *got[i].TTL != 0 {
		t.Fatalf("expires_at_ttl: %+v", got)
	}
	if i, ok := byName["sub_unique"]; !ok || !got[i].Unique {
		t.Fatalf("sub_unique: %+v", got)
	}
	if i, ok := byName["owner_at"]; !ok || got[i].Unique {
		t.Fatalf("owner_at is still unique: %+v", got)
	}
}
