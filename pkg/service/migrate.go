package service

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/caarlos0/env/v11"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/logging"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
)

// migrateMain is `<service> migrate`: it reads the MongoDB settings (LINKMESH_MONGODB_URI,
// LINKMESH_MONGODB_DATABASE), the log level and whatever setting a step of the service needs
// (Schema.Migrate reads those itself), brings the service's database to its schema and exits.
// Running it again, or twice at once, changes nothing more.
func migrateMain(spec Spec) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var settings struct {
		LogLevel string `env:"LINKMESH_LOG_LEVEL" envDefault:"info"`
		config.Mongo
	}
	if err := env.Parse(&settings); err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	level, err := config.ParseLogLevel(settings.LogLevel)
	if err != nil {
		return err
	}
	log := logging.New(os.Stdout, spec.Name, level)
	if spec.Schema == nil {
		log.Info("no database to migrate")
		return nil
	}
	config.ApplyDefaults(spec.Name, &config.Service{}, &settings.Mongo, nil)
	client, db, err := mongodb.Connect(ctx, settings.URI.Reveal(), settings.Database, noop.NewTracerProvider())
	if err != nil {
		return err
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	return migrate(ctx, spec, db, log)
}

// migrate runs spec's schema migration on db and records its version as applied, refusing a
// database a later release already migrated.
func migrate(ctx context.Context, spec Spec, db *mongo.Database, log *slog.Logger) error {
	if spec.Schema.ReadableFrom < 0 || spec.Schema.ReadableFrom > spec.Schema.Version {
		return fmt.Errorf("%s: schema readable from %d: want 0 (its own version) up to %d", spec.Name, spec.Schema.ReadableFrom, spec.Schema.Version)
	}
	applied, readableFrom, ok, err := mongodb.AppliedSchema(ctx, db)
	if err != nil {
		return err
	}
	// Never older steps over a newer schema. One this release still reads (a rollback by
	// upgrading to it, whose hook runs this) needs nothing; any other is refused as a serving
	// replica refuses it.
	if ok && applied > spec.Schema.Version {
		if readableFrom > spec.Schema.Version {
			return mongodb.CheckSchema(ctx, db, spec.Name, spec.Schema.Version)
		}
		log.Info("schema newer than this release, and readable by it: nothing to migrate", "database", db.Name(), "applied", applied, "readable_from", readableFrom, "version", spec.Schema.Version)
		return nil
	}
	start := time.Now()
	log.Info("migrating", "database", db.Name(), "from", applied, "to", spec.Schema.Version)
	if err := spec.Schema.Migrate(ctx, db); err != nil {
		return fmt.Errorf("migrate %s: %w", db.Name(), err)
	}
	readable := spec.Schema.Version
	if spec.Schema.ReadableFrom > 0 {
		readable = spec.Schema.ReadableFrom
	}
	if err := mongodb.MarkApplied(ctx, db, spec.Schema.Version, readable); err != nil {
		return err
	}
	// A later release's migration may have run meanwhile.
	if err := mongodb.CheckSchema(ctx, db, spec.Name, spec.Schema.Version); err != nil {
		return err
	}
	log.Info("migrated", "database", db.Name(), "version", spec.Schema.Version, "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}
