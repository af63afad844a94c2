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
	"go.mongodb.org/mongo-driver/v2/mongo/options"
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
// companion that PostgreSQL uses for FerretDB's own pushed-down query, also once the plan is
// cached, that an index made again under its old name over other fields gets a companion of
// its own, and that the companion goes when the index does.
func TestFerretIndexesGetCompanions(t *testing.T) {
	d := startTestDatastores(t, t.TempDir())
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	coll := connectMongo(t, d.MongoURI).Database("probe").Collection("owned")
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
	if _, err := pg.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		t.Fatal(err)
	}
	var table string
	if err := pg.QueryRow(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'probe' AND tablename LIKE 'owned%'`).Scan(&table); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.Exec(ctx, fmt.Sprintf(`PREPARE by_field(text, jsonb) AS SELECT _jsonb FROM probe.%s WHERE _jsonb -> $1 @> $2`, pgx.Identifier{table}.Sanitize())); err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if _, err := pg.Exec(ctx, `EXECUTE by_field('owner', '"u7"')`); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "owner", Value: 1}, {Key: "at", Value: -1}}, Options: options.Index().SetName("by_owner")}); err != nil {
		t.Fatal(err)
	}
	// companions maps each companion's definition to the index it belongs to.
	companions := func() map[string]string {
		rows, err := pg.Query(ctx, `SELECT i.indexdef, obj_description(c.oid, 'pg_class') FROM pg_indexes i JOIN pg_class c ON c.relname = i.indexname
			WHERE i.schemaname = 'probe' AND obj_description(c.oid, 'pg_class') LIKE 'linkmesh: GIN companion of %'`)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for rows.Next() {
			var def, of string
			if err := rows.Scan(&def, &of); err != nil {
				t.Fatal(err)
			}
			out[def] = of
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	fieldsOf := func(defs map[string]string) []string {
		var out []string
		for def := range defs {
			out = append(out, def[strings.Index(def, "USING gin"):])
		}
		slices.Sort(out)
		return out
	}
	waitFor(t, "companions of _id and by_owner", func() bool { return len(companions()) == 2 })
	if got := fieldsOf(companions()); !slices.Equal(got, []string{
		"USING gin (((_jsonb -> '_id'::text)) jsonb_path_ops)",
		"USING gin (((_jsonb -> 'owner'::text)) jsonb_path_ops, ((_jsonb -> 'at'::text)) jsonb_path_ops)",
	}) {
		t.Fatalf("companions %q", got)
	}

	if _, err := pg.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	// FerretDB's equality filter as it sends it, the key a parameter, the value containment,
	// prepared while the owner field had no companion (the reverse of the real order), so
	// PostgreSQL has settled on a generic plan, which cannot see the key, unless it is told
	// to plan with the values every time.
	if plan := explain(t, pg, `EXPLAIN EXECUTE by_field('owner', '"u7"')`); !strings.Contains(plan, "lm_gin_") {
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

	// The same name over another field: the old companion goes, a new one comes.
	if err := coll.Indexes().DropOne(ctx, "by_owner"); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetName("by_owner")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "by_owner's new companion", func() bool {
		return slices.Equal(fieldsOf(companions()), []string{
			"USING gin (((_jsonb -> '_id'::text)) jsonb_path_ops)",
			"USING gin (((_jsonb -> 'at'::text)) jsonb_path_ops)",
		})
	})
	if err := coll.Indexes().DropOne(ctx, "by_owner"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the dropped index's companion to go", func() bool { return len(companions()) == 1 })
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
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if ok() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}
