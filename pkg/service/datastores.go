package service

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.opentelemetry.io/otel/trace"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/redisdb"
	"github.com/linkmesh/linkmesh/pkg/server"
)

// Datastores are a service's own MongoDB database and its Redis client; each is nil when
// the service's configuration has no settings for it.
type Datastores struct {
	Mongo *mongo.Client
	DB    *mongo.Database
	Redis redis.UniversalClient
}

// openDatastores connects to the datastores cfg configures, traced with tp.
func openDatastores(ctx context.Context, cfg Config, tp trace.TracerProvider) (*Datastores, error) {
	d := &Datastores{}
	if m := MongoOf(cfg); m != nil {
		var err error
		if d.Mongo, d.DB, err = mongodb.Connect(ctx, m.URI.Reveal(), m.Database, tp); err != nil {
			return nil, err
		}
	}
	if r := RedisOf(cfg); r != nil {
		rdb, err := redisdb.Connect(ctx, r.URL.Reveal(), tp)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.Redis = rdb
	}
	return d, nil
}

// Checks are the readiness checks of the open datastores.
func (d *Datastores) Checks() map[string]server.Check {
	checks := map[string]server.Check{}
	if d.Mongo != nil {
		checks["mongodb"] = mongodb.Ping(d.Mongo)
	}
	if d.Redis != nil {
		checks["redis"] = redisdb.Ping(d.Redis)
	}
	return checks
}

// classifiers recognise outages of the open datastores only: a service without MongoDB must
// never blame it.
func (d *Datastores) classifiers() []errs.Classifier {
	var c []errs.Classifier
	if d.Mongo != nil {
		c = append(c, mongodb.Classify)
	}
	if d.Redis != nil {
		c = append(c, redisdb.Classify)
	}
	return c
}

// Close releases the open clients.
func (d *Datastores) Close() {
	if d.Redis != nil {
		_ = d.Redis.Close()
	}
	if d.Mongo != nil {
		_ = d.Mongo.Disconnect(context.Background())
	}
}
