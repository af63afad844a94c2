// Package mongodb connects a service to its own MongoDB database with command tracing.
package mongodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
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

// EnsureIndexes creates the indexes; creating an existing identical index is a no-op, so a
// migration run again (or two at once) changes nothing. The code keeps one index per key pattern: an index of the same
// keys under another name, or of the same name with other options (a TTL or unique index
// replacing a plain one, or the other way round, made by a replica of another version during a
// rolling update), is dropped and the wanted one made.
func EnsureIndexes(ctx context.Context, db *mongo.Database, indexes ...Index) error {
	if isSchemaChecked(ctx) { // the migration made them (see SchemaChecked)
		return nil
	}
	existing := map[string][]indexSpec{}
	for _, ix := range indexes {
		view := db.Collection(ix.Collection).Indexes()
		specs, ok := existing[ix.Collection]
		if !ok {
			var err error
			if specs, err = listIndexes(ctx, view); err != nil {
				return fmt.Errorf("list indexes of %s: %w", ix.Collection, err)
			}
			existing[ix.Collection] = specs
		}
		name, keys, err := nameAndKeys(ix.Model)
		if err != nil {
			return fmt.Errorf("index on %s: %w", ix.Collection, err)
		}
		for _, s := range specs {
			if name != "" && s.Name != name && s.Name != "_id_" && sameKeys(s.Key, keys) {
				if err := view.DropOne(ctx, s.Name); err != nil {
					return fmt.Errorf("drop index %s.%s, replaced by %s: %w", ix.Collection, s.Name, name, err)
				}
			}
		}
		_, err = view.CreateOne(ctx, ix.Model)
		if isIndexConflict(err) && name != "" {
			if err = view.DropOne(ctx, name); err == nil {
				_, err = view.CreateOne(ctx, ix.Model)
			}
		}
		if err != nil {
			return fmt.Errorf("create index on %s: %w", ix.Collection, err)
		}
	}
	return nil
}

// indexSpec is an index as listIndexes describes it.
type indexSpec struct {
	Name string `bson:"name"`
	Key  bson.D `bson:"key"`
}

func listIndexes(ctx context.Context, view mongo.IndexView) ([]indexSpec, error) {
	cur, err := view.List(ctx)
	if err != nil {
		return nil, err
	}
	var specs []indexSpec
	return specs, cur.All(ctx, &specs)
}

// nameAndKeys are the name m sets ("" when the server is to choose) and its keys.
func nameAndKeys(m mongo.IndexModel) (string, bson.D, error) {
	raw, err := bson.Marshal(m.Keys)
	if err != nil {
		return "", nil, fmt.Errorf("index keys: %w", err)
	}
	var keys bson.D
	if err := bson.Unmarshal(raw, &keys); err != nil {
		return "", nil, fmt.Errorf("index keys: %w", err)
	}
	var name string
	if m.Options != nil {
		var opts options.IndexOptions
		for _, set := range m.Options.List() {
			_ = set(&opts)
		}
		if opts.Name != nil {
			name = *opts.Name
		}
	}
	return name, keys, nil
}

// isIndexConflict tells an index refused for another index of its name:
// IndexOptionsConflict (85) or IndexKeySpecsConflict (86).
func isIndexConflict(err error) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && (ce.Code == 85 || ce.Code == 86)
}

// sameKeys tells whether two index key documents name the same fields in the same order and
// directions (or kinds, such as "hashed"), whatever number type each direction is stored as.
func sameKeys(a, b bson.D) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || keyValue(a[i].Value) != keyValue(b[i].Value) {
			return false
		}
	}
	return true
}

func keyValue(v any) string {
	switch n := v.(type) {
	case int32:
		return fmt.Sprint(float64(n))
	case int64:
		return fmt.Sprint(float64(n))
	case int:
		return fmt.Sprint(float64(n))
	case float64:
		return fmt.Sprint(n)
	}
	return fmt.Sprint(v)
}

// Ping is a readiness check for the client.
func Ping(client *mongo.Client) func(context.Context) error {
	return func(ctx context.Context) error { return client.Ping(ctx, nil) }
}
