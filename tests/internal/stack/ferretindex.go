package stack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// FerretDB v1 keeps each collection in a PostgreSQL table of jsonb documents and makes each
// MongoDB index a btree index on expressions such as (_jsonb -> 'owner_id'). But the equality
// filters it pushes down to PostgreSQL test containment, `_jsonb -> 'owner_id' @> '"u1"'`,
// which a btree cannot answer: every find, by _id included, read the whole table (13 ms
// for one document out of 50,000, growing with the table). A GIN index with jsonb_path_ops
// on the same expressions answers containment (0.4 ms there), so for every btree index
// FerretDB makes, the indexer adds a GIN companion over the same fields, and drops a
// companion whose index is gone. The key in FerretDB's SQL is a parameter (`_jsonb -> $1`),
// so PostgreSQL must plan every execution with its values (plan_cache_mode =
// force_custom_plan, set where PostgreSQL starts): a generic plan cannot pick an index on an
// expression it cannot see.
//
// Real MongoDB needs none of this; a deployment that keeps FerretDB v1 in production
// needs the same companions.

// indexerPeriod is how soon a new collection's indexes get their companions.
const indexerPeriod = 2 * time.Second

// companionMark begins the comment that ties a companion to its btree index.
const companionMark = "linkmesh: GIN companion of "

// jsonbColumn is one column of a FerretDB index on a top-level field, as pg_indexes prints
// it; nested fields and other expressions get no companion.
var jsonbColumn = regexp.MustCompile(`^\(\(_jsonb -> '((?:[^']|'')+)'::text\)\)( DESC)?$`)

// indexer keeps the companions in step with FerretDB's indexes.
type indexer struct {
	pool *pgxpool.Pool
	log  *slog.Logger
}

// startIndexer brings the companions in step once and then every indexerPeriod until ctx
// ends. A failed round (PostgreSQL away, a table dropped meanwhile) is logged and retried.
func startIndexer(ctx context.Context, pgURL string, log *slog.Logger) (*indexer, error) {
	cfg, err := pgxpool.ParseConfig(pgURL)
	if err != nil {
		return nil, fmt.Errorf("start indexer: %w", err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start indexer: %w", err)
	}
	x := &indexer{pool: pool, log: log}
	if err := x.sync(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("start indexer: %w", err)
	}
	return x, nil
}

// run repeats sync until ctx ends, then closes the pool.
func (x *indexer) run(ctx context.Context) {
	defer x.pool.Close()
	t := time.NewTicker(indexerPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := x.sync(rctx); err != nil && ctx.Err() == nil {
			x.log.Warn("gin companion indexes not in step", "err", err)
		}
		cancel()
	}
}

// pgIndex is one index of a FerretDB table.
type pgIndex struct {
	schema, table, name, def, comment string
}

// sync creates the missing companions and drops the orphaned ones.
func (x *indexer) sync(ctx context.Context) error {
	rows, err := x.pool.Query(ctx, `
		SELECT i.schemaname, i.tablename, i.indexname, i.indexdef, coalesce(obj_description(c.oid, 'pg_class'), '')
		FROM pg_indexes i
		JOIN pg_namespace n ON n.nspname = i.schemaname
		JOIN pg_class c ON c.relname = i.indexname AND c.relnamespace = n.oid
		WHERE i.schemaname NOT IN ('pg_catalog', 'information_schema') AND i.tablename NOT LIKE '\_ferretdb%'`)
	if err != nil {
		return fmt.Errorf("list indexes: %w", err)
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgIndex, error) {
		var i pgIndex
		err := r.Scan(&i.schema, &i.table, &i.name, &i.def, &i.comment)
		return i, err
	})
	if err != nil {
		return fmt.Errorf("list indexes: %w", err)
	}
	exists := map[string]bool{}    // schema.index of every index
	companion := map[string]bool{} // schema.base of every companion
	for _, i := range all {
		exists[i.schema+"."+i.name] = true
		if base, ok := strings.CutPrefix(i.comment, companionMark); ok {
			companion[i.schema+"."+base] = true
		}
	}
	for _, i := range all {
		if base, ok := strings.CutPrefix(i.comment, companionMark); ok {
			if !exists[i.schema+"."+base] {
				if _, err := x.pool.Exec(ctx, "DROP INDEX IF EXISTS "+pgx.Identifier{i.schema, i.name}.Sanitize()); err != nil {
					return fmt.Errorf("drop companion %s: %w", i.name, err)
				}
			}
			continue
		}
		if companion[i.schema+"."+i.name] {
			continue
		}
		fields, ok := btreeFields(i.def)
		if !ok {
			continue
		}
		if err := x.create(ctx, i, fields); err != nil {
			return err
		}
	}
	return nil
}

// create adds the companion of i over fields (as quoted in i's definition) and marks it; a
// companion left unmarked by an interrupted round is found by its name and marked.
func (x *indexer) create(ctx context.Context, i pgIndex, fields []string) error {
	sum := sha256.Sum256([]byte(i.schema + "." + i.name))
	name := "lm_gin_" + hex.EncodeToString(sum[:8])
	cols := make([]string, len(fields))
	for k, f := range fields {
		cols[k] = "(_jsonb -> '" + f + "') jsonb_path_ops"
	}
	start := time.Now()
	q := fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s USING gin (%s)",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{i.schema, i.table}.Sanitize(), strings.Join(cols, ", "))
	if _, err := x.pool.Exec(ctx, q); err != nil {
		return fmt.Errorf("create companion of %s: %w", i.name, err)
	}
	comment := fmt.Sprintf("COMMENT ON INDEX %s IS '%s'", pgx.Identifier{i.schema, name}.Sanitize(),
		strings.ReplaceAll(companionMark+i.name, "'", "''"))
	if _, err := x.pool.Exec(ctx, comment); err != nil {
		return fmt.Errorf("mark companion of %s: %w", i.name, err)
	}
	x.log.Info("gin companion index created", "schema", i.schema, "table", i.table, "index", i.name,
		"fields", len(fields), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// btreeFields returns the top-level fields of a FerretDB btree index, as quoted in its
// definition, or false when it is not one (another kind, or a nested field).
func btreeFields(def string) ([]string, bool) {
	_, cols, ok := strings.Cut(def, " USING btree (")
	if !ok || !strings.HasSuffix(cols, ")") {
		return nil, false
	}
	var fields []string
	for _, col := range splitTopLevel(strings.TrimSuffix(cols, ")")) {
		m := jsonbColumn.FindStringSubmatch(col)
		if m == nil {
			return nil, false
		}
		fields = append(fields, m[1])
	}
	return fields, len(fields) > 0
}

// splitTopLevel splits s at the commas outside parentheses and quotes.
func splitTopLevel(s string) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for k := 0; k < len(s); k++ {
		switch c := s[k]; {
		case c == '\'':
			quoted = !quoted // a doubled quote flips twice
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:k]))
			start = k + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}
