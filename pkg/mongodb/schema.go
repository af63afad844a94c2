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

// A database's schema is brought up to date by a migration run of its own (`<service>
// migrate`: the chart's hook Job before every install and upgrade, devstack and the tests
// before they start a service), never by a serving replica: an index build on a large
// collection can take longer than any start-up probe allows. The migration runs the data
// steps (Migrate) and creates the indexes (EnsureIndexes), then records the version it
// completed as "applied" in the schema document. A replica only checks that version at start
// (CheckSchema); the boot path then marks its context (SchemaChecked), under which the steps
// and index builds its stores' constructors run are skipped.

// ErrSchema is the class of CheckSchema's refusals.
var ErrSchema = errors.New("schema")

type schemaChecked struct{}

// SchemaChecked marks ctx: the database's schema is known to be applied, so Migrate and
// EnsureIndexes under it do nothing.
func SchemaChecked(ctx context.Context) context.Context {
	return context.WithValue(ctx, schemaChecked{}, true)
}

func isSchemaChecked(ctx context.Context) bool {
	v, _ := ctx.Value(schemaChecked{}).(bool)
	return v
}

// MarkApplied records that db's schema is complete at version: its steps ran and its indexes
// exist. readableFrom is the oldest schema version whose code can still read and write it
// (version itself unless the release says its steps only added what older code ignores): a
// replica of the release before, restarting while the new one rolls out, may keep serving on it.
// Only forward, so a migration of an older release running late never lowers either.
//
// readable_from only rises ($max): code that could not read an earlier step's schema cannot
// read a later one either, whatever the later release says of its own steps.
func MarkApplied(ctx context.Context, db *mongo.Database, version, readableFrom int) error {
	readable := bson.D{{Key: "readable_from", Value: min(readableFrom, version)}}
	coll := db.Collection(SchemaCollection)
	filter := bson.D{{Key: "_id", Value: "schema"}, {Key: "$or", Value: bson.A{
		bson.D{{Key: "applied", Value: bson.D{{Key: "$exists", Value: false}}}},
		bson.D{{Key: "applied", Value: bson.D{{Key: "$lt", Value: version}}}},
	}}}
	_, err := coll.UpdateOne(ctx, filter, bson.D{
		{Key: "$set", Value: bson.D{{Key: "applied", Value: version}, {Key: "applied_at", Value: time.Now().UTC()}}},
		{Key: "$max", Value: readable},
	}, options.UpdateOne().SetUpsert(true))
	if err != nil && !mongo.IsDuplicateKeyError(err) { // a duplicate: the document exists at this version or later
		return fmt.Errorf("record schema version %d as applied: %w", version, err)
	}
	// At this version already (a migration run again): only raise readable_from, if asked.
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "schema"}, {Key: "applied", Value: version}},
		bson.D{{Key: "$max", Value: readable}}); err != nil {
		return fmt.Errorf("record schema version %d as applied: %w", version, err)
	}
	return nil
}

// AppliedSchema returns the applied version and the oldest version whose code reads it, and
// false when no migration has recorded one.
func AppliedSchema(ctx context.Context, db *mongo.Database) (applied, readableFrom int, ok bool, err error) {
	var doc struct {
		Applied      *int `bson:"applied"`
		ReadableFrom *int `bson:"readable_from"`
	}
	err = db.Collection(SchemaCollection).FindOne(ctx, bson.D{{Key: "_id", Value: "schema"}}).Decode(&doc)
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return 0, 0, false, nil
	case err != nil:
		return 0, 0, false, fmt.Errorf("read schema version: %w", err)
	case doc.Applied == nil:
		return 0, 0, false, nil
	}
	readableFrom = *doc.Applied
	if doc.ReadableFrom != nil {
		readableFrom = *doc.ReadableFrom
	}
	return *doc.Applied, readableFrom, true, nil
}

// CheckSchema refuses a database whose applied schema this code, which reads version, cannot
// serve: newer, unless the release that migrated it recorded that code of this version still
// reads it (a rolling update's old replicas restarting), or older, or none (the migration has
// not run). service names the command that migrates it.
func CheckSchema(ctx context.Context, db *mongo.Database, service string, version int) error {
	applied, readableFrom, ok, err := AppliedSchema(ctx, db)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%w: database %s has no schema applied; run the migration first (the chart's migration Job, or `%s migrate`)", ErrSchema, db.Name(), service)
	case applied > version && readableFrom <= version:
		return nil
	case applied > version:
		return fmt.Errorf("%w: database %s is at schema version %d, newer than this release knows (%d): a later release migrated it; run that release, or restore the database from before its migration", ErrSchema, db.Name(), applied, version)
	case applied < version:
		return fmt.Errorf("%w: database %s is at schema version %d and this release needs %d; run the migration first (the chart's migration Job, or `%s migrate`)", ErrSchema, db.Name(), applied, version, service)
	}
	return nil
}
