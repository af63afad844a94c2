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

// sessionDoc is a stored session, keyed by the token's SHA-256; the token is never stored.
// The server deletes it once expires_at has passed (the TTL index, see New).
type sessionDoc struct {
	Hash      string    `bson:"_id"`
	UserID    string    `bson:"user_id"`
	CreatedAt time.Time `bson:"created_at"`
	ExpiresAt time.Time `bson:"expires_at"`
	Epoch     int64     `bson:"epoch,omitempty"`
}

// InsertSession stores a new session.
func (s *Store) InsertSession(ctx context.Context, sess accounts.Session) error {
	if _, err := s.sessions.InsertOne(ctx, sessionDoc(sess)); err != nil {
		return fmt.Errorf("insert session: %w", err)
	}
	return nil
}

// SessionByHash returns the session with hash unless it has expired at now. The TTL index
// deletes an expired session only when its background job next runs (about once a minute),
// so the filter refuses one that is still stored.
func (s *Store) SessionByHash(ctx context.Context, hash string, now time.Time) (accounts.Session, error) {
	filter := append(byID(hash), bson.E{Key: "expires_at", Value: bson.D{{Key: "$gt", Value: now}}})
	var d sessionDoc
	err := s.sessions.FindOne(ctx, filter).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return accounts.Session{}, accounts.ErrSessionNotFound
	}
	if err != nil {
		return accounts.Session{}, fmt.Errorf("find session: %w", err)
	}
	return accounts.Session{Hash: d.Hash, UserID: d.UserID, CreatedAt: d.CreatedAt.UTC(), ExpiresAt: d.ExpiresAt.UTC(),
		Epoch: d.Epoch}, nil
}

// DeleteSession revokes a session; deleting a missing one is not an error.
func (s *Store) DeleteSession(ctx context.Context, hash string) error {
	if _, err := s.sessions.DeleteOne(ctx, byID(hash)); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// DeleteSessionsByUser revokes every session of userID and says how many there were.
func (s *Store) DeleteSessionsByUser(ctx context.Context, userID string) (int64, error) {
	res, err := s.sessions.DeleteMany(ctx, bson.D{{Key: "user_id", Value: userID}})
	if err != nil {
		return 0, fmt.Errorf("delete sessions of user: %w", err)
	}
	return res.DeletedCount, nil
}
