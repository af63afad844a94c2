package stack

import (
	"context"
	neturl "net/url"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// OwnRedisDB points url at Redis database db, emptied before and after the test, so that the
// services a test starts (the analytics consumer group above all) take nothing of the tests
// running beside it.
func OwnRedisDB(t testing.TB, url string, db int) string {
	t.Helper()
	own, release, err := IsolatedRedisDB(url, db)
	if err != nil {
		t.Fatalf("redis: %v", err)
	}
	t.Cleanup(release)
	return own
}

// IsolatedRedisDB is OwnRedisDB for a TestMain: it empties database db and returns its URL
// and the func that empties it again when the tests are done.
func IsolatedRedisDB(url string, db int) (string, func(), error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return "", nil, err
	}
	opts.DB = db
	client := redis.NewClient(opts)
	ctx := context.Background()
	if err := client.FlushDB(ctx).Err(); err != nil {
		_ = client.Close()
		return "", nil, err
	}
	release := func() {
		_ = client.FlushDB(ctx).Err()
		_ = client.Close()
	}
	u, err := neturl.Parse(url)
	if err != nil {
		release()
		return "", nil, err
	}
	u.Path = "/" + strconv.Itoa(db)
	return u.String(), release, nil
}

// DropDatabases drops the databases services started with prefix created (prefix_<svc>).
func DropDatabases(t testing.TB, uri, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Logf("drop databases: %v", err)
		return
	}
	defer func() { _ = client.Disconnect(ctx) }()
	for _, svc := range ServiceNames() {
		if err := client.Database(prefix + "_" + svc).Drop(ctx); err != nil {
			t.Logf("drop %s_%s: %v", prefix, svc, err)
		}
	}
}
