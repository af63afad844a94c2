package mongodb_test

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

func TestMigrateRunsEachStepOnceInOrder(t *testing.T) {
	db := testenv.Mongo(t)
	ctx := context.Background()
	var ran []int
	fail := true
	steps := []mongodb.Step{
		{Version: 1, Name: "one", Run: func(context.Context, *mongo.Database) error { ran = append(ran, 1); return nil }},
		{Version: 2, Name: "two", Run: func(context.Context, *mongo.Database) error {
			ran = append(ran, 2)
			if fail {
				return errors.New("crash half way")
			}
			return nil
		}},
	}
	if err := mongodb.Migrate(ctx, db, steps...); err == nil {
		t.Fatal("a failing step: want an error")
	}
	fail = false
	if err := mongodb.Migrate(ctx, db, steps...); err != nil {
		t.Fatal(err)
	}
	if err := mongodb.Migrate(ctx, db, steps...); err != nil {
		t.Fatal(err)
	}
	// Step 1 once; step 2 failed, then ran again and succeeded; the third call runs nothing.
	if want := []int{1, 2, 2}; !equal(ran, want) {
		t.Fatalf("steps ran %v, want %v", ran, want)
	}
	var v struct {
		Version int `bson:"version"`
	}
	if err := db.Collection(mongodb.SchemaCollection).FindOne(ctx, bson.D{{Key: "_id", Value: "schema"}}).Decode(&v); err != nil || v.Version != 2 {
		t.Fatalf("recorded version %d (%v), want 2", v.Version, err)
	}
	// A database ahead of the steps (a rollback) is left alone.
	if err := mongodb.Migrate(ctx, db, steps[0]); err != nil {
		t.Fatal(err)
	}
	if err := db.Collection(mongodb.SchemaCollection).FindOne(ctx, bson.D{{Key: "_id", Value: "schema"}}).Decode(&v); err != nil || v.Version != 2 {
		t.Fatalf("after a rollback's migrate: version %d (%v), want 2", v.Version, err)
	}
}

func TestDropStepsAreIdempotent(t *testing.T) {
	db := testenv.Mongo(t)
	ctx := context.Background()
	if _, err := db.Collection("old").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := mongodb.DropIndexes("old", "gone", "never_made")(ctx, db); err != nil {
			t.Fatal(err)
		}
		if err := mongodb.DropIndexes("no_such_collection", "x")(ctx, db); err != nil {
			t.Fatal(err)
		}
		if err := mongodb.DropCollections("old", "no_such_collection")(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: "old"}})
	if err != nil || len(names) != 0 {
		t.Fatalf("collections named old: %v (%v), want none", names, err)
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
