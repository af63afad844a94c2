package mongodb_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// A serving replica accepts only the schema its code reads: none applied, an older one and a
// newer one are refused with what to do; the applied version only moves forward.
func TestCheckSchema(t *testing.T) {
	db := testenv.Mongo(t)
	ctx := context.Background()
	for _, c := range []struct {
		applied int // -1: none
		want    string
	}{
		{-1, "no schema applied; run the migration first"},
		{1, "at schema version 1 and this release needs 2; run the migration first"},
		{2, ""},
		{3, "newer than this release knows (2)"},
	} {
		if c.applied >= 0 {
			if err := mongodb.MarkApplied(ctx, db, c.applied, c.applied); err != nil {
				t.Fatal(err)
			}
		}
		err := mongodb.CheckSchema(ctx, db, "link", 2)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("applied %d: %v", c.applied, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, mongodb.ErrSchema)):
			t.Errorf("applied %d: %v, want %q", c.applied, err, c.want)
		}
	}
	// An older migration running late does not lower it.
	if err := mongodb.MarkApplied(ctx, db, 1, 1); err != nil {
		t.Fatal(err)
	}
	if v, _, ok, err := mongodb.AppliedSchema(ctx, db); err != nil || !ok || v != 3 {
		t.Errorf("applied after a late older migration: %d %v %v, want 3", v, ok, err)
	}
}

// readable_from lets code of an older schema serve on a newer one its release declared
// readable, and only ever rises.
func TestReadableFrom(t *testing.T) {
	db := testenv.Mongo(t)
	ctx := context.Background()
	if err := mongodb.MarkApplied(ctx, db, 2, 2); err != nil {
		t.Fatal(err)
	}
	// Schema 4 only added to schema 2: replicas of 2 keep serving during its rollout, those
	// of 1 may not.
	if err := mongodb.MarkApplied(ctx, db, 4, 2); err != nil {
		t.Fatal(err)
	}
	if err := mongodb.CheckSchema(ctx, db, "link", 2); err != nil {
		t.Errorf("schema 4, readable from 2, refused by code of 2: %v", err)
	}
	if err := mongodb.CheckSchema(ctx, db, "link", 1); err == nil || !strings.Contains(err.Error(), "newer than this release knows") {
		t.Errorf("schema 4, readable from 2, by code of 1: %v", err)
	}
	// Schema 5 claims code of 1 reads it, but code of 1 could not read schema 2.
	if err := mongodb.MarkApplied(ctx, db, 5, 1); err != nil {
		t.Fatal(err)
	}
	if _, rf, _, err := mongodb.AppliedSchema(ctx, db); err != nil || rf != 2 {
		t.Errorf("readable_from %d after a later release claimed 1 (%v), want 2", rf, err)
	}
	// The same version migrated again may raise it.
	if err := mongodb.MarkApplied(ctx, db, 5, 3); err != nil {
		t.Fatal(err)
	}
	if v, rf, _, err := mongodb.AppliedSchema(ctx, db); err != nil || v != 5 || rf != 3 {
		t.Errorf("after the same version with readable_from 3: %d, %d (%v), want 5, 3", v, rf, err)
	}
}

// Under a context SchemaChecked marks, Migrate and EnsureIndexes do nothing: a serving replica
// never runs a step or builds an index.
func TestSchemaCheckedSkipsMigrations(t *testing.T) {
	db := testenv.Mongo(t)
	ctx := mongodb.SchemaChecked(context.Background())
	ran := false
	if err := mongodb.Migrate(ctx, db, mongodb.Step{Version: 1, Name: "x", Run: func(context.Context, *mongo.Database) error { ran = true; return nil }}); err != nil || ran {
		t.Fatalf("Migrate under a checked schema: ran %v, %v", ran, err)
	}
	if err := mongodb.EnsureIndexes(ctx, db, mongodb.Index{Collection: "things", Model: mongo.IndexModel{
		Keys: bson.D{{Key: "a", Value: 1}}, Options: options.Index().SetName("a")}}); err != nil {
		t.Fatal(err)
	}
	names, err := db.ListCollectionNames(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == "things" || n == mongodb.SchemaCollection {
			t.Errorf("%s made under a checked schema", n)
		}
	}
}
