package stack

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startTestDatastores starts datastores in dir and stops them when the test ends.
func startTestDatastores(t *testing.T, dir string) *Datastores {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real datastores")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	start := time.Now()
	d, err := StartDatastores(ctx, dir, logger)
	if err != nil {
		t.Fatalf("StartDatastores: %v", err)
	}
	t.Logf("StartDatastores took %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(d.Stop)
	return d
}

// connectMongo returns a client for uri, disconnected when the test ends.
func connectMongo(t *testing.T, uri string) *mongo.Client {
	t.Helper()
	client, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatalf("mongo connect: %v", err)
	}
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	return client
}

func TestDatastoresRoundTrip(t *testing.T) {
	d := startTestDatastores(t, t.TempDir())
	ctx := t.Context()

	opts, err := redis.ParseURL(d.RedisURL)
	if err != nil {
		t.Fatalf("parse redis url %q: %v", d.RedisURL, err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		t.Fatalf("redis SET: %v", err)
	}
	if got, err := rdb.Get(ctx, "greeting").Result(); err != nil || got != "hello" {
		t.Fatalf("redis GET = %q, %v; want hello", got, err)
	}

	coll := connectMongo(t, d.MongoURI).Database("stack_test").Collection("links")
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "code", Value: 1}},
		Options: options.Index().SetUnique(true),
	})
	if err != nil {
		t.Fatalf("create unique index: %v", err)
	}
	if _, err := coll.InsertOne(ctx, bson.M{"code": "abc", "url": "https://example.com"}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	_, err = coll.InsertOne(ctx, bson.M{"code": "abc", "url": "https://example.org"})
	if !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("second insert with same code: err = %v, want duplicate key error", err)
	}
	var got struct {
		URL string `bson:"url"`
	}
	if err := coll.FindOne(ctx, bson.M{"code": "abc"}).Decode(&got); err != nil {
		t.Fatalf("find: %v", err)
	}
	if got.URL != "https://example.com" {
		t.Fatalf("found url %q, want https://example.com", got.URL)
	}

	addrs := []string{hostOf(t, d.RedisURL), hostOf(t, d.MongoURI), hostOf(t, d.PostgresURL)}
	d.Stop()
	d.Stop() // must be safe twice
	for _, addr := range addrs {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections after Stop", addr)
		}
	}
}

func TestDatastoresRestartKeepsData(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()

	d := startTestDatastores(t, dir)
	coll := connectMongo(t, d.MongoURI).Database("stack_test").Collection("links")
	if _, err := coll.InsertOne(ctx, bson.M{"code": "keep", "url": "https://example.com/kept"}); err != nil {
		t.Fatalf("insert: %v", err)
	}
	d.Stop()

	d = startTestDatastores(t, dir)
	coll = connectMongo(t, d.MongoURI).Database("stack_test").Collection("links")
	var got struct {
		URL string `bson:"url"`
	}
	if err := coll.FindOne(ctx, bson.M{"code": "keep"}).Decode(&got); err != nil {
		t.Fatalf("find after restart: %v", err)
	}
	if got.URL != "https://example.com/kept" {
		t.Fatalf("url after restart = %q", got.URL)
	}
	// The store's background jobs (TTL deletes, index builds) reach the server on the port
	// it has now, not the one it had when they were scheduled.
	conn, err := pgx.Connect(ctx, d.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var jobs, elsewhere int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE nodename <> '127.0.0.1' OR nodeport <> current_setting('port')::int)
		FROM cron.job`).Scan(&jobs, &elsewhere); err != nil {
		t.Fatal(err)
	}
	if jobs == 0 || elsewhere != 0 {
		t.Fatalf("%d of %d background jobs point at another server", elsewhere, jobs)
	}
}

func TestStalePostmasterPIDIsRemoved(t *testing.T) {
	dir := t.TempDir()
	// A PID far above pid_max on any default system is never alive.
	if err := os.WriteFile(dir+"/postmaster.pid", []byte("999999999\n/data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	if err := removeStalePostmasterPID(dir, logger); err != nil {
		t.Fatalf("removeStalePostmasterPID: %v", err)
	}
	if _, err := os.Stat(dir + "/postmaster.pid"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale postmaster.pid still present: %v", err)
	}
}

// hostOf returns host:port of a datastore URL.
func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return u.Host
}
