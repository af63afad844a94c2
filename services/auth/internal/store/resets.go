package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// resetDoc is a password-reset token mailed out, found by its hash; the token itself is
// never stored. The TTL index removes it once expires_at has passed.
type resetDoc struct {
	Hash      string    `bson:"_id"`
	UserID    string    `bson:"user_id"`
	CreatedAt time.Time `bson:"created_at"`
	ExpiresAt time.Time `bson:"expires_at"`
}

// InsertReset stores a reset token's hash for userID until expires.
func (s *Store) InsertReset(ctx context.Context, hash, userID string, now, expires time.Time) error {
	if _, err := s.resets.InsertOne(ctx, resetDoc{Hash: hash, UserID: userID, CreatedAt: now, ExpiresAt: expires}); err != nil {
		return fmt.Errorf("insert password reset: %w", err)
	}
	return nil
}

// TakeReset removes the reset token with hash, if it is still valid at now, and returns whose
// it was: a token is used once (of two racing confirmations one gets it). An unknown, used
// or expired token is accounts.ErrResetInvalid.
func (s *Store) TakeReset(ctx context.Context, hash string, now time.Time) (string, error) {
	var d resetDoc
	err := s.resets.FindOneAndDelete(ctx, bson.D{{Key: "_id", Value: hash}, {Key: "expires_at", Value: bson.D{{Key: "$gt", Value: now}}}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", accounts.ErrResetInvalid
	}
	if err != nil {
		return "", fmt.Errorf("take password reset: %w", err)
	}
	return d.UserID, nil
}

// DeleteResetsOf removes every reset token of userID (its password changed, or the account
// went).
func (s *Store) DeleteResetsOf(ctx context.Context, userID string) error {
	if _, err := s.resets.DeleteMany(ctx, bson.D{{Key: "user_id", Value: userID}}); err != nil {
		return fmt.Errorf("delete password resets: %w", err)
	}
	return nil
}
