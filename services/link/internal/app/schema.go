package app

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/link/internal/store"
)

// Schema is the link database's: the link store's steps and indexes, and the webhooks'.
var Schema = &service.Schema{Version: store.SchemaVersion, Migrate: func(ctx context.Context, db *mongo.Database) error {
	if _, err := store.New(ctx, db); err != nil {
		return err
	}
	_, err := store.NewWebhooks(ctx, db)
	return err
}}
