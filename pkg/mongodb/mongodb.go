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

// MaxConnIdle is how long a pooled connection may stay unused before it is closed, unless the
// URI sets maxIdleTimeMS.
const MaxConnIdle = time.Minute

// Connect opens a client for uri, traced with tp, and returns the named database. It fails if
// the server does not answer a ping within 10 seconds.
func Connect(ctx context.Context, uri, database string, tp trace.TracerProvider) (*mongo.Client, *mongo.Database, error) {
	client, err := mongo.Connect(clientOptions(uri, tp))
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

// clientOptions are the options of every client: the URI's, with bounded server selection and
// connection set-up, and idle connections closed after MaxConnIdle — connections opened for a
// burst, or kept through an outage, so that the pool shrinks back to what the load needs.
func clientOptions(uri string, tp trace.TracerProvider) *options.ClientOptions {
	opts := options.Client().ApplyURI(uri).
		SetMonitor(NewTracer(tp)).
		SetServerSelectionTimeout(5 * time.Second).
		SetConnectTimeout(5 * time.Second)
	if opts.MaxConnIdleTime == nil {
		opts.SetMaxConnIdleTime(MaxConnIdle)
	}
	return opts
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
