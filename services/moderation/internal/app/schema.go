package app

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/moderation/internal/store"
)

// Schema is the moderation database's: its indexes (no data step yet).
var Schema = &service.Schema{Version: 0, Migrate: func(ctx context.Context, db *mongo.Database) error {
	_, err := store.New(ctx, db)
	return err
}}
