package service

import (
	"context"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.opentelemetry.io/otel/trace"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/redisdb"
	"github.com/linkmesh/linkmesh/pkg/server"
)

// Datastores are a service's own MongoDB database and its Redis client.
type Datastores struct {
	Mongo *mongo.Client
	DB    *mongo.Database
	Redis *redis.Client
}

// OpenDatastores connects to both, traced with tp.
func OpenDatastores(ctx context.Context, m config.Mongo, r config.Redis, tp trace.TracerProvider) (*Datastores, error) {
	mc, db, err := mongodb.Connect(ctx, m.URI.Reveal(), m.Database, tp)
	if err != nil {
		return nil, err
	}
	rdb, err := redisdb.Connect(ctx, r.URL.Reveal(), tp)
	if err != nil {
		_ = mc.Disconnect(ctx)
		return nil, err
	}
	return &Datastores{Mongo: mc, DB: db, Redis: rdb}, nil
}

// Checks are the readiness checks of both datastores.
func (d *Datastores) Checks() map[string]server.Check {
	return map[string]server.Check{"mongodb": mongodb.Ping(d.Mongo), "redis": redisdb.Ping(d.Redis)}
}

// Close releases both clients.
func (d *Datastores) Close() {
	_ = d.Redis.Close()
	_ = d.Mongo.Disconnect(context.Background())
}
