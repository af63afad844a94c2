package store

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// A database at schema version 0 (write holds, a plain index on the sessions' expiry, login
// records without one) is brought up to date at store start, once.
func TestNewMigratesSchemaZero(t *testing.T) {
	ctx := context.Background()
	db := testenv.Mongo(t)
	created := ms(time.Now().Add(-24 * time.Hour))
	if _, err := db.Collection("account_holds").InsertOne(ctx, bson.D{{Key: "_id", Value: "u1"}, {Key: "at", Value: created}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection(Sessions).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "expires_at", Value: 1}},
		Options: options.Index().SetName("expires_at")}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection(Users).Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "idp_uid", Value: 1}},
		Options: options.Index().SetName("idp_uid")}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection(LoginRecords).InsertOne(ctx, bson.D{{Key: "_id", Value: "r1"}, {Key: "email", Value: "a@example.com"},
		{Key: "created_at", Value: created}}); err != nil {
		t.Fatal(err)
	}
	s, err := New(ctx, db, testRetention)
	if err != nil {
		t.Fatal(err)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: "account_holds"}})
	if err != nil || len(names) != 0 {
		t.Fatalf("account_holds after the migration: %v, %v", names, err)
	}
	wantTTLIndex(t, s.sessions)
	var d recordDoc
	if err := s.records.FindOne(ctx, byID("r1")).Decode(&d); err != nil || !d.ExpiresAt.Equal(created.Add(testRetention)) {
		t.Fatalf("old record expires at %v, %v; want %v", d.ExpiresAt, err, created.Add(testRetention))
	}
	var v struct {
		Version int `bson:"version"`
	}
	if err := db.Collection(mongodb.SchemaCollection).FindOne(ctx, byID("schema")).Decode(&v); err != nil || v.Version != 1 {
		t.Fatalf("schema version %d, %v; want 1", v.Version, err)
	}
	// Done once: a later start with another retention leaves stored expiries alone.
	if _, err := New(ctx, db, 2*testRetention); err != nil {
		t.Fatal(err)
	}
	if err := s.records.FindOne(ctx, byID("r1")).Decode(&d); err != nil || !d.ExpiresAt.Equal(created.Add(testRetention)) {
		t.Fatalf("old record expires at %v after a second start, %v", d.ExpiresAt, err)
	}
}
