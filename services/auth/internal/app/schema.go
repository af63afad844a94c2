package app

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/auth/internal/mail"
	"github.com/linkmesh/linkmesh/services/auth/internal/store"
)

// Schema is the auth database's: the account store's steps and indexes, and the mail outbox's
// indexes.
var Schema = &service.Schema{Version: store.SchemaVersion, Migrate: func(ctx context.Context, db *mongo.Database) error {
	if err := store.Migrate(ctx, db); err != nil {
		return err
	}
	_, err := mail.NewOutbox(ctx, db, nil, nil)
	return err
}}
