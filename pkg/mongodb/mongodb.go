// Package mongodb connects a service to its own MongoDB database with command tracing.
package mongodb

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.opentelemetry.io/otel/trace"
)

// Connect opens a client for uri, traced with tp, and returns the named database. It fails if
// the server does not answer a ping within 10 seconds.
func Connect(ctx context.Context, uri, database string, tp trace.TracerProvider) (*mongo.Client, *mongo.Database, error) {
	opts := options.Client().ApplyURI(uri).
		SetMonitor(NewTracer(tp)).
		SetServerSelectionTimeout(5 * time.Second).
		SetConnectTimeout(5 * time.Second)
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("connect mongodb: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Ping(pctx, nil); err != nil {
		_ = client.Disconnect(context.Background())
		return nil, nil, fmt.Errorf("ping mongodb: %w", err)
	}
	return client, client.Database(database), nil
}

// Index is one index a store needs.
type Index struct {
	Collection string
	Model      mongo.IndexModel
}

// EnsureIndexes creates the indexes; creating an existing identical index is a no-op, so every
// replica runs this at start-up.
func EnsureIndexes(ctx context.Context, db *mongo.Database, indexes ...Index) error {
	for _, ix := range indexes {
		if _, err := db.Collection(ix.Collection).Indexes().CreateOne(ctx, ix.Model); err != nil {
			return fmt.Errorf("create index on %s: %w", ix.Collection, err)
		}
	}
	return nil
}

// Ping is a readiness check for the client.
func Ping(client *mongo.Client) func(context.Context) error {
	return func(ctx context.Context) error { return client.Ping(ctx, nil) }
}
