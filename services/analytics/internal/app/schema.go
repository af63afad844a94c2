package app

import (
	"context"
	"fmt"

	"github.com/caarlos0/env/v11"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/analytics/internal/config"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// Schema is the analytics database's: the store's step and indexes. The step from schema 0
// gives the raw clicks and visitors kept until then their expiry, from the configured
// LINKMESH_CLICK_RETENTION: the migration reads it as the service does (any other value would
// have the TTL index delete, or keep, the wrong clicks).
var Schema = &service.Schema{Version: store.SchemaVersion, Migrate: func(ctx context.Context, db *mongo.Database) error {
	var cfg config.Config
	if err := env.Parse(&cfg); err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	_, err := store.New(ctx, db, cfg.ClickRetention)
	return err
}}
