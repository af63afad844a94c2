package stack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

func TestBtreeFields(t *testing.T) {
	for _, c := range []struct {
		def    string
		fields []string
	}{
		{`CREATE UNIQUE INDEX c__id__67_idx ON probe.c_e6 USING btree (((_jsonb -> '_id'::text)))`, []string{"_id"}},
		{`CREATE INDEX x ON s.t USING btree (((_jsonb -> 'f1'::text)), ((_jsonb -> 'f2'::text)) DESC)`, []string{"f1", "f2"}},
		{`CREATE INDEX x ON s.t USING btree (((_jsonb -> 'it''s, (odd)'::text)), ((_jsonb -> 'b'::text)))`, []string{"it''s, (odd)", "b"}},
		{`CREATE INDEX x ON s.t USING btree ((((_jsonb -> 'a'::text) -> 'b'::text)))`, nil}, // nested
		{`CREATE INDEX x ON s.t USING gin (((_jsonb -> 'a'::text)) jsonb_path_ops)`, nil},
		{`CREATE INDEX x ON s.t USING btree (_ferretdb_record_id)`, nil},
	} {
		got, ok := btreeFields(c.def)
		if ok != (c.fields != nil) || !slices.Equal(got, c.fields) {
			t.Errorf("btreeFields(%q) = %q, %v; want %q", c.def, got, ok, c.fields)
		}
	}
}

// TestFerretIndexesGetCompanions checks that an index made through FerretDB gets a GIN
// companion that PostgreSQL uses for FerretDB's own pushed-down query, and that the companion
// goes when the index does.
func TestFerretIndexesGetCompanions(t *testing.T) {
	d := startTestDatastores(t, t.TempDir())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	coll := connectMongo(t, d.MongoURI).Database("probe").Collection("owned")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "owner", Value: 1}, {Key: "at", Value: -1}}}); err != nil {
		t.Fatal(err)
	}
	docs := make([]any, 3000)
	for i := range docs {
		docs[i] = bson.D{{Key: "owner", Value: fmt.Sprintf("u%d", i%300)}, {Key: "at", Value: i}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	pg, err := pgx.Connect(ctx, d.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(context.WithoutCancel(ctx))
	if _, err := pg.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	var table string
	if err := pg.QueryRow(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'probe' AND tablename LIKE 'owned%'`).Scan(&table); err != nil {
		t.Fatal(err)
	}
	companions := func() int {
		var n int
		if err := pg.QueryRow(ctx, `SELECT count(*) FROM pg_indexes i JOIN pg_class c ON c.relname = i.indexname
			WHERE i.schemaname = 'probe' AND obj_description(c.oid, 'pg_class') LIKE 'linkmesh: GIN companion of %'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor(t, "companions of _id and owner_at", func() bool { return companions() == 2 })

	// FerretDB's equality filter, as it sends it: the key a parameter, the value containment.
	plan := explain(t, pg, fmt.Sprintf(`EXPLAIN SELECT _jsonb FROM probe.%s WHERE _jsonb -> $1 @> $2`, pgx.Identifier{table}.Sanitize()), "owner", `"u7"`)
	if !strings.Contains(plan, "lm_gin_") {
		t.Fatalf("the owner filter does not use the companion:\n%s", plan)
	}
	var got []bson.M
	cur, err := coll.Find(ctx, bson.D{{Key: "owner", Value: "u7"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &got); err != nil || len(got) != 10 {
		t.Fatalf("find by owner: %d documents, %v; want 10", len(got), err)
	}

	if err := coll.Indexes().DropOne(ctx, "owner_1_at_-1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the dropped index's companion to go", func() bool { return companions() == 1 })
}

func explain(t *testing.T, pg *pgx.Conn, q string, args ...any) string {
	t.Helper()
	rows, err := pg.Query(t.Context(), q, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(4 * indexerPeriod); ; time.Sleep(100 * time.Millisecond) {
		if ok() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", 4*indexerPeriod, what)
		}
	}
}
