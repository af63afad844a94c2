package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// TestMigrationRuns runs the link service's migration as the chart's hook Job runs it
// (`link migrate`) on the embedded store, against a database left by a release from before
// the schema's steps: links without a revision, a collection no longer used, an expiry that
// owes no event. The service refuses that database; the migration brings it to the current
// schema with its indexes; a second run changes nothing; and a database a later release
// migrated is refused by both the service and the migration.
func TestMigrationRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := mongo.Connect(options.Client().ApplyURI(mongoURI))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(context.Background())
	prefix := testenv.Name("e2e_migrate")
	t.Cleanup(func() { stack.DropDatabases(t, mongoURI, prefix) })
	dbName := prefix + "_link"
	db := client.Database(dbName)
	past := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	if _, err := db.Collection("links").InsertMany(ctx, []any{
		bson.D{{Key: "short_code", Value: "old0001"}, {Key: "owner_id", Value: "u1"}, {Key: "destination_url", Value: "https://example.com/"},
			{Key: "status", Value: "active"}, {Key: "auto_renew", Value: 0}, {Key: "expires_at", Value: past}, {Key: "created_at", Value: past}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("link_changes").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}

	keys, err := stack.GenerateInternalKeys()
	if err != nil {
		t.Fatal(err)
	}
	webhookKey, err := stack.RandomSecret()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(stack.BinDir(), "link")
	run := func(args ...string) (string, error) {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(cctx, bin, args...)
		cmd.Env = append(os.Environ(), "LINKMESH_MONGODB_URI="+mongoURI, "LINKMESH_MONGODB_DATABASE="+dbName,
			"LINKMESH_REDIS_URL="+redisURL, "LINKMESH_LISTEN_ADDR=127.0.0.1:0", "OTEL_TRACES_EXPORTER=none",
			"LINKMESH_INTERNAL_KEY="+keys.Keys["link"], "LINKMESH_INTERNAL_CERTS="+keys.Certs, "LINKMESH_WEBHOOK_KEY="+webhookKey)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	schema := func() bson.M {
		var doc bson.M
		if err := db.Collection("schema_version").FindOne(ctx, bson.D{{Key: "_id", Value: "schema"}}).Decode(&doc); err != nil {
			t.Fatalf("schema document: %v", err)
		}
		return doc
	}

	// The service refuses a database no migration has brought to its schema.
	out, err := run()
	if err == nil || !strings.Contains(out, "no schema applied; run the migration first") {
		t.Fatalf("the service on an unmigrated database: %v\n%s", err, out)
	}

	// Old schema to the current one.
	if out, err := run("migrate"); err != nil {
		t.Fatalf("link migrate: %v\n%s", err, out)
	}
	doc := schema()
	if fmt.Sprint(doc["version"]) != "3" || fmt.Sprint(doc["applied"]) != "3" {
		t.Fatalf("schema after the migration: %v, want version and applied 3", doc)
	}
	var link bson.M
	if err := db.Collection("links").FindOne(ctx, bson.D{{Key: "short_code", Value: "old0001"}}).Decode(&link); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(link["rev"]) != "0" {
		t.Errorf("step 1: rev %v, want 0", link["rev"])
	}
	if _, ok := link["expired_event_for"]; !ok {
		t.Errorf("step 3: a link expired before events owes none, but has no expired_event_for: %v", link)
	}
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if n == "link_changes" {
			t.Error("step 2: link_changes is still there")
		}
	}
	indexes := func() []string {
		cur, err := db.Collection("links").Indexes().List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var specs []bson.M
		if err := cur.All(ctx, &specs); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range specs {
			out = append(out, s["name"].(string))
		}
		return out
	}
	if got := strings.Join(indexes(), ","); !strings.Contains(got, "short_code_unique") || !strings.Contains(got, "owner_created") {
		t.Errorf("indexes after the migration: %s", got)
	}

	// Twice: nothing runs again. A link expired later and left without its mark would get one
	// from step 3 if it ran again.
	if _, err := db.Collection("links").InsertOne(ctx, bson.D{{Key: "short_code", Value: "old0002"}, {Key: "owner_id", Value: "u1"},
		{Key: "rev", Value: 1}, {Key: "status", Value: "active"}, {Key: "auto_renew", Value: 0}, {Key: "expires_at", Value: past}}); err != nil {
		t.Fatal(err)
	}
	before := schema()["applied_at"]
	if out, err := run("migrate"); err != nil {
		t.Fatalf("link migrate, again: %v\n%s", err, out)
	}
	var again bson.M
	if err := db.Collection("links").FindOne(ctx, bson.D{{Key: "short_code", Value: "old0002"}}).Decode(&again); err != nil {
		t.Fatal(err)
	}
	if _, ok := again["expired_event_for"]; ok {
		t.Error("the second migration ran step 3 again")
	}
	if after := schema(); fmt.Sprint(after["applied"]) != "3" || fmt.Sprint(after["applied_at"]) != fmt.Sprint(before) {
		t.Errorf("the second migration changed the schema document: %v", after)
	}

	// A database a later release migrated, saying code of this release still reads it: this
	// release's migration (the hook of a rollback by upgrade) has nothing to do.
	if _, err := db.Collection("schema_version").UpdateOne(ctx, bson.D{{Key: "_id", Value: "schema"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "applied", Value: 4}, {Key: "version", Value: 4}, {Key: "readable_from", Value: 3}}}}); err != nil {
		t.Fatal(err)
	}
	if out, err := run("migrate"); err != nil || !strings.Contains(out, "nothing to migrate") {
		t.Errorf("link migrate on a newer schema it reads: %v\n%s", err, out)
	}
	// One it cannot read: the service refuses it, and so does this release's migration (it
	// must not run older steps over a newer schema).
	if _, err := db.Collection("schema_version").UpdateOne(ctx, bson.D{{Key: "_id", Value: "schema"}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "applied", Value: 99}, {Key: "version", Value: 99}, {Key: "readable_from", Value: 99}}}}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"migrate"}} {
		out, err := run(args...)
		if err == nil || !strings.Contains(out, "newer than this release knows") {
			t.Errorf("link %v on a newer schema: %v\n%s", args, err, out)
		}
	}
}
