// Package testenv gives integration tests the real datastores that `make test` starts
// (a Redis server and a MongoDB wire-protocol server), each test on its own database.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/redisdb"
)

// Environment variables set by `devstack exec`, which `make test` runs the tests under.
const (
	EnvMongoURI = "LINKMESH_TEST_MONGODB_URI"
	EnvRedisURL = "LINKMESH_TEST_REDIS_URL"
	// EnvRequire turns a missing datastore from a skip into a failure; `make test` sets it so
	// integration tests can never pass by not running.
	EnvRequire = "LINKMESH_REQUIRE_INTEGRATION"
)

// URIs returns the datastore addresses, skipping the test (or failing it under EnvRequire)
// when they are not set.
func URIs(t testing.TB) (mongoURI, redisURL string) {
	t.Helper()
	mongoURI, redisURL = os.Getenv(EnvMongoURI), os.Getenv(EnvRedisURL)
	if mongoURI == "" || redisURL == "" {
		if os.Getenv(EnvRequire) != "" {
			t.Fatalf("%s and %s must be set (run `make test`)", EnvMongoURI, EnvRedisURL)
		}
		t.Skipf("integration test: %s and %s unset (run `make test`)", EnvMongoURI, EnvRedisURL)
	}
	return mongoURI, redisURL
}

// Name returns a unique name with prefix, for databases and key prefixes.
func Name(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// Mongo connects to a fresh database that is dropped when the test ends.
func Mongo(t testing.TB) *mongo.Database {
	t.Helper()
	uri, _ := URIs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, db, err := mongodb.Connect(ctx, uri, Name("test"), noop.NewTracerProvider())
	if err != nil {
		t.Fatalf("connect mongodb: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = db.Drop(ctx)
		_ = client.Disconnect(ctx)
	})
	return db
}

// Redis connects to the test Redis server. Tests share it, so they must use unique keys
// (see Name).
func Redis(t testing.TB) redis.UniversalClient {
	t.Helper()
	_, url := URIs(t)
	client, err := redisdb.Connect(context.Background(), url, noop.NewTracerProvider())
	if err != nil {
		t.Fatalf("connect redis: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}
