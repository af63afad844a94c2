package mongodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// SchemaCollection holds a database's schema version: one document, {_id: "schema", version}.
const SchemaCollection = "schema_version"

// Step is one change of a database's schema or data, from version Version-1 to Version. A
// step must be idempotent: a crash half way runs it again, and two replicas starting at once
// may both run it.
type Step struct {
	Version int
	Name    string
	Run     func(ctx context.Context, db *mongo.Database) error
}

// Migrate brings db to the last step's version: it runs, in order, every step above the
// version db records, and records each version once its step has succeeded. A database
// newer than the steps (a rollback) is left as it is.
//
// Under a context marked by SchemaChecked (a serving replica whose database the migration
// already brought up to date), it does nothing.
func Migrate(ctx context.Context, db *mongo.Database, steps ...Step) error {
	if isSchemaChecked(ctx) {
		return nil
	}
	coll := db.Collection(SchemaCollection)
	var cur struct {
		Version int `bson:"version"`
	}
	err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "schema"}}).Decode(&cur)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return fmt.Errorf("read schema version: %w", err)
	}
	for i, s := range steps {
		if s.Version != i+1 {
			return fmt.Errorf("migrate: step %q has version %d, want %d", s.Name, s.Version, i+1)
		}
		if s.Version <= cur.Version {
			continue
		}
		if err := s.Run(ctx, db); err != nil {
			return fmt.Errorf("migrate to %d (%s): %w", s.Version, s.Name, err)
		}
		// Only forward: a replica that ran a later step already keeps its version.
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "schema"}, {Key: "version", Value: bson.D{{Key: "$lt", Value: s.Version}}}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "version", Value: s.Version}, {Key: "at", Value: time.Now().UTC()}}}},
			options.UpdateOne().SetUpsert(true))
		if err != nil && !mongo.IsDuplicateKeyError(err) { // a duplicate: another replica is ahead
			return fmt.Errorf("record schema version %d: %w", s.Version, err)
		}
	}
	return nil
}

// DropCollections is a step body that drops collections no longer used; dropping one that
// does not exist succeeds.
func DropCollections(names ...string) func(context.Context, *mongo.Database) error {
	return func(ctx context.Context, db *mongo.Database) error {
		for _, n := range names {
			if err := db.Collection(n).Drop(ctx); err != nil {
				return fmt.Errorf("drop %s: %w", n, err)
			}
		}
		return nil
	}
}

// DropIndexes is a step body that drops indexes no longer used, by name; dropping one that
// does not exist (or of a collection that does not) succeeds.
func DropIndexes(collection string, names ...string) func(context.Context, *mongo.Database) error {
	return func(ctx context.Context, db *mongo.Database) error {
		for _, n := range names {
			err := db.Collection(collection).Indexes().DropOne(ctx, n)
			var ce mongo.CommandError
			if err != nil && !(errors.As(err, &ce) && (ce.Code == 26 || ce.Code == 27)) { // NamespaceNotFound, IndexNotFound
				return fmt.Errorf("drop index %s.%s: %w", collection, n, err)
			}
		}
		return nil
	}
}
