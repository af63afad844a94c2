package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// sessionDoc is a stored session, keyed by the token's SHA-256; the token is never stored.
// The server deletes it once expires_at has passed (the TTL index, see New).
type sessionDoc struct {
	Hash       string     `bson:"_id"`
	UserID     string     `bson:"user_id"`
	CreatedAt  time.Time  `bson:"created_at"`
	ExpiresAt  time.Time  `bson:"expires_at"`
	Epoch      int64      `bson:"epoch,omitempty"`
	UserAgent  string     `bson:"user_agent,omitempty"`
	LastSeenAt *time.Time `bson:"last_seen_at,omitempty"`
}

func (d sessionDoc) session() accounts.Session {
	out := accounts.Session(d)
	out.CreatedAt, out.ExpiresAt = d.CreatedAt.UTC(), d.ExpiresAt.UTC()
	if d.LastSeenAt != nil {
		at := d.LastSeenAt.UTC()
		out.LastSeenAt = &at
	}
	return out
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
	return d.session(), nil
}

// SessionsOf returns userID's sessions live at now, newest first.
func (s *Store) SessionsOf(ctx context.Context, userID string, now time.Time) ([]accounts.Session, error) {
	cur, err := s.sessions.Find(ctx, bson.D{{Key: "user_id", Value: userID}, {Key: "expires_at", Value: bson.D{{Key: "$gt", Value: now}}}},
		options.Find().SetSort(bson.D{{Key: "created_at", Value: -1}, {Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("find sessions: %w", err)
	}
	var docs []sessionDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read sessions: %w", err)
	}
	out := make([]accounts.Session, len(docs))
	for i, d := range docs {
		out[i] = d.session()
	}
	return out, nil
}

// DeleteSessions revokes userID's sessions with these hashes and says how many there were.
func (s *Store) DeleteSessions(ctx context.Context, userID string, hashes []string) (int64, error) {
	res, err := s.sessions.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: hashes}}}, {Key: "user_id", Value: userID}})
	if err != nil {
		return 0, fmt.Errorf("delete sessions: %w", err)
	}
	return res.DeletedCount, nil
}

// TouchSession sets the session's last_seen_at to at, unless it is already later than at
// minus granularity (another replica recorded it meanwhile): at most one write a minute.
func (s *Store) TouchSession(ctx context.Context, hash string, at time.Time, granularity time.Duration) error {
	filter := append(byID(hash), bson.E{Key: "$or", Value: bson.A{
		bson.D{{Key: "last_seen_at", Value: bson.D{{Key: "$exists", Value: false}}}},
		bson.D{{Key: "last_seen_at", Value: bson.D{{Key: "$lte", Value: at.Add(-granularity)}}}},
	}})
	if _, err := s.sessions.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "last_seen_at", Value: at}}}}); err != nil {
		return fmt.Errorf("touch session: %w", err)
	}
	return nil
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
