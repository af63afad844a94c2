package stack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresMajor is the PostgreSQL release the store's DocumentDB extension is built for.
const postgresMajor = "15"

// storeMarker is a file in the PostgreSQL data directory saying the cluster holds the
// DocumentDB store. A cluster without it was made for the store used before, whose data
// is not migrated.
const storeMarker = "linkmesh-store"

// documentDBSettings are the server settings DocumentDB needs (from FerretDB's packaging).
// Debian's pg_cron (1.4) refuses a schedule in seconds, so index builds are polled each
// minute; TTL deletes run from the same cron, once a minute.
var documentDBSettings = []string{
	"-c", "shared_preload_libraries=pg_cron,pg_documentdb_core,pg_documentdb",
	"-c", "cron.database_name=postgres",
	"-c", "documentdb.enableCompact=true",
	"-c", "documentdb.enableLetAndCollationForQueryMatch=true",
	"-c", "documentdb.enableNowSystemVariable=true",
	"-c", "documentdb.enableSchemaValidation=true",
	"-c", "documentdb.enableBypassDocumentValidation=true",
	"-c", "documentdb.enableUserCrud=true",
	"-c", "documentdb.indexBuildScheduleInSec=60",
	// DocumentDB enforces unique indexes with exclusion constraints, on which concurrent
	// inserts of one key can deadlock; find those in a tenth of the default second.
	"-c", "deadlock_timeout=100ms",
}

// setAsideOldStore moves a PostgreSQL data directory made for the earlier store (no
// storeMarker) out of the way, so a new cluster is made in its place. Its data is kept
// where it was moved, not migrated.
func setAsideOldStore(dataDir string, logger *slog.Logger) error {
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dataDir, storeMarker)); err == nil {
		return nil
	}
	aside := dataDir + "-ferretdb-v1-" + time.Now().UTC().Format("20060102T150405")
	if err := os.Rename(dataDir, aside); err != nil {
		return fmt.Errorf("move the old store's data aside: %w", err)
	}
	logger.Warn("the embedded store is now FerretDB v2 on PostgreSQL with DocumentDB; "+
		"the old store's data is not migrated and was moved aside", "moved_to", aside)
	return nil
}

// ensureDocumentDB creates the DocumentDB extension (and those it needs) once per
// cluster, then marks the data directory as the store's.
func ensureDocumentDB(ctx context.Context, url, dataDir string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS documentdb CASCADE"); err != nil {
		return fmt.Errorf("create extension documentdb: %w (deploy/local/install-store.sh builds it)", err)
	}
	if err := pointCronAtThisServer(ctx, conn); err != nil {
		return err
	}
	marker := filepath.Join(dataDir, storeMarker)
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(marker, []byte("ferretdb-v2 documentdb\n"), 0o644); err != nil {
		return fmt.Errorf("mark the store: %w", err)
	}
	return nil
}

// pointCronAtThisServer makes DocumentDB's background jobs (TTL deletes, concurrent index
// builds, cursor clean-up) connect to this server. pg_cron keeps, with each job, the host
// and port the server had when the extension scheduled it; the store picks a free port at
// every start, so on a reused data directory every job would fail to connect ("cron job 1
// connection failed" in the server log) and TTL indexes would delete nothing.
func pointCronAtThisServer(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, `UPDATE cron.job SET nodename = '127.0.0.1', nodeport = current_setting('port')::int
		WHERE nodename IS DISTINCT FROM '127.0.0.1' OR nodeport IS DISTINCT FROM current_setting('port')::int`)
	if err != nil {
		return fmt.Errorf("point the store's background jobs at this server: %w", err)
	}
	return nil
}
