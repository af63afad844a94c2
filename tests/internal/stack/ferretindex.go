package stack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/linkmesh/linkmesh/pkg/logging"
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

// startIndexer connects the indexer; run brings the companions in step at once and then
// every indexerPeriod.
func startIndexer(ctx context.Context, pgURL string, log *slog.Logger) (*indexer, error) {
	cfg, err := pgxpool.ParseConfig(pgURL)
	if err != nil {
		return nil, fmt.Errorf("start indexer: %w", err)
	}
	cfg.MaxConns = 1
	// A build waits for no one for long: a table busy with an open cursor is tried again next
	// round, instead of every query on it queueing behind the build's lock.
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = "1s"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start indexer: %w", err)
	}
	return &indexer{pool: pool, log: log}, nil
}

// run repeats sync until ctx ends, then closes the pool. A failed round (PostgreSQL away, a
// table dropped or busy meanwhile) is logged, at most once a minute, and retried.
func (x *indexer) run(ctx context.Context) {
	defer x.pool.Close()
	t := time.NewTicker(indexerPeriod)
	defer t.Stop()
	failures := logging.Limiter{Every: time.Minute}
	for {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := x.sync(rctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			if ok, suppressed := failures.Allow(time.Now()); ok {
				x.log.Warn("gin companion indexes not in step", "err", err, "suppressed", suppressed)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
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
	bases := map[string]bool{}  // schema.name of every index that is no companion
	marked := map[string]bool{} // schema.name of every companion
	for _, i := range all {
		if strings.HasPrefix(i.comment, companionMark) {
			marked[i.schema+"."+i.name] = true
		} else {
			bases[i.schema+"."+i.name] = true
		}
	}
	// A companion is named after its index's definition: one whose index is gone, or was made
	// again under the same name over other fields, is no longer anybody's and goes.
	want := map[string]bool{}
	var errs []error
	for _, i := range all {
		if marked[i.schema+"."+i.name] {
			continue
		}
		fields, ok := btreeFields(i.def)
		if !ok {
			continue
		}
		name := companionName(i)
		want[i.schema+"."+name] = true
		if marked[i.schema+"."+name] {
			continue
		}
		if err := x.create(ctx, i, name, fields); err != nil {
			errs = append(errs, err)
		}
	}
	for _, i := range all {
		if marked[i.schema+"."+i.name] && !want[i.schema+"."+i.name] {
			if _, err := x.pool.Exec(ctx, "DROP INDEX IF EXISTS "+pgx.Identifier{i.schema, i.name}.Sanitize()); err != nil {
				errs = append(errs, fmt.Errorf("drop companion %s: %w", i.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// companionName names i's companion after i's schema, name and definition.
func companionName(i pgIndex) string {
	sum := sha256.Sum256([]byte(i.schema + "\x00" + i.name + "\x00" + i.def))
	return "lm_gin_" + hex.EncodeToString(sum[:8])
}

// create adds i's companion name over fields (as quoted in i's definition) and marks it, in
// one transaction: no companion is left unmarked, which nothing would ever drop.
func (x *indexer) create(ctx context.Context, i pgIndex, name string, fields []string) error {
	cols := make([]string, len(fields))
	for k, f := range fields {
		cols[k] = "(_jsonb -> '" + f + "') jsonb_path_ops"
	}
	start := time.Now()
	err := pgx.BeginFunc(ctx, x.pool, func(tx pgx.Tx) error {
		q := fmt.Sprintf("CREATE INDEX IF NOT EXISTS %s ON %s USING gin (%s)",
			pgx.Identifier{name}.Sanitize(), pgx.Identifier{i.schema, i.table}.Sanitize(), strings.Join(cols, ", "))
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, fmt.Sprintf("COMMENT ON INDEX %s IS '%s'", pgx.Identifier{i.schema, name}.Sanitize(),
			strings.ReplaceAll(companionMark+i.name, "'", "''")))
		return err
	})
	if err != nil {
		return fmt.Errorf("create companion of %s: %w", i.name, err)
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

// IndexesInStep gives every index FerretDB has made so far its GIN companion now, rather
// than within indexerPeriod, and refreshes PostgreSQL's statistics: for a measurement that
// must not see a companion built under it. It does nothing on datastores without FerretDB.
func (d *Datastores) IndexesInStep(ctx context.Context) error {
	if d == nil || d.ferret == nil || d.ferret.indexer == nil {
		return nil
	}
	if err := d.ferret.indexer.sync(ctx); err != nil {
		return err
	}
	if _, err := d.ferret.indexer.pool.Exec(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}
