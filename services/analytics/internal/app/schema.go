package app

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// Schema is the analytics database's: the store's step and indexes (the retention only
// bounds the clicks stored later, so any will do here).
var Schema = &service.Schema{Version: store.SchemaVersion, Migrate: func(ctx context.Context, db *mongo.Database) error {
	_, err := store.New(ctx, db, time.Hour)
	return err
}}
