package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// tokenDoc is a stored API token, found by the secret's SHA-256; the secret is never stored.
// The server deletes it once expires_at has passed (the TTL index, see New).
type tokenDoc struct {
	ID         string     `bson:"_id"`
	Hash       string     `bson:"hash"`
	UserID     string     `bson:"user_id"`
	Slot       int        `bson:"slot"`
	Name       string     `bson:"name"`
	Scopes     []string   `bson:"scopes"`
	Prefix     string     `bson:"prefix"`
	CreatedAt  time.Time  `bson:"created_at"`
	ExpiresAt  time.Time  `bson:"expires_at"`
	LastUsedAt *time.Time `bson:"last_used_at,omitempty"`
}

func (d tokenDoc) token() accounts.APIToken {
	t := accounts.APIToken(d)
	t.CreatedAt, t.ExpiresAt = d.CreatedAt.UTC(), d.ExpiresAt.UTC()
	if d.LastUsedAt != nil {
		at := d.LastUsedAt.UTC()
		t.LastUsedAt = &at
	}
	return t
}

// InsertToken stores t; accounts.ErrSlotTaken when its owner has a token in that slot (the
// unique index on user_id and slot decides between racing creations).
//
// Workaround for the embedded store (DocumentDB): racing inserts of one slot deadlock on
// the unique index instead of answering duplicate key, and three or more can livelock (see
// mongodb.Turns). Within a replica they take turns; a deadlock with another replica's
// insert reads as a taken slot, which the caller settles by choosing a slot again
// (TestTokenBoundUnderRaces failed on "deadlock detected" without this).
func (s *Store) InsertToken(ctx context.Context, t accounts.APIToken) error {
	done, err := s.slots.Take(ctx, t.UserID+"\x00"+strconv.Itoa(t.Slot))
	if err != nil {
		return fmt.Errorf("insert api token: %w", err)
	}
	defer done()
	_, err = s.tokens.InsertOne(ctx, tokenDoc(t))
	if mongo.IsDuplicateKeyError(err) || mongodb.IsDeadlock(err) {
		return accounts.ErrSlotTaken
	}
	if err != nil {
		return fmt.Errorf("insert api token: %w", err)
	}
	return nil
}

// TokensOf returns every stored token of userID, newest first.
func (s *Store) TokensOf(ctx context.Context, userID string) ([]accounts.APIToken, error) {
	docs, err := mongodb.Find[tokenDoc](ctx, s.tokens, "api tokens", bson.D{{Key: "user_id", Value: userID}}, mongodb.NewestFirst(),
		0, 4*accounts.MaxLiveTokens)
	if err != nil {
		return nil, err
	}
	out := make([]accounts.APIToken, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.token())
	}
	return out, nil
}

// TokenByHash returns the token with hash unless it has expired at now; the TTL index
// deletes it only when its job next runs, so the filter refuses one still stored.
func (s *Store) TokenByHash(ctx context.Context, hash string, now time.Time) (accounts.APIToken, error) {
	var d tokenDoc
	err := s.tokens.FindOne(ctx, bson.D{{Key: "hash", Value: hash}, {Key: "expires_at", Value: bson.D{{Key: "$gt", Value: now}}}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return accounts.APIToken{}, accounts.ErrTokenNotFound
	}
	if err != nil {
		return accounts.APIToken{}, fmt.Errorf("find api token: %w", err)
	}
	return d.token(), nil
}

// DeleteToken deletes userID's token id; false when there is none.
func (s *Store) DeleteToken(ctx context.Context, userID, id string) (bool, error) {
	res, err := s.tokens.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "user_id", Value: userID}})
	if err != nil {
		return false, fmt.Errorf("delete api token: %w", err)
	}
	return res.DeletedCount == 1, nil
}

// DeleteExpiredTokens deletes userID's tokens that have expired at now.
func (s *Store) DeleteExpiredTokens(ctx context.Context, userID string, now time.Time) error {
	_, err := s.tokens.DeleteMany(ctx, bson.D{{Key: "user_id", Value: userID}, {Key: "expires_at", Value: bson.D{{Key: "$lte", Value: now}}}})
	if err != nil {
		return fmt.Errorf("delete expired api tokens: %w", err)
	}
	return nil
}

// TouchToken sets last_used_at to at unless it is already at or after at - granularity.
func (s *Store) TouchToken(ctx context.Context, id string, at time.Time, granularity time.Duration) error {
	filter := bson.D{{Key: "_id", Value: id}, {Key: "$or", Value: bson.A{
		bson.D{{Key: "last_used_at", Value: bson.D{{Key: "$exists", Value: false}}}},
		bson.D{{Key: "last_used_at", Value: bson.D{{Key: "$lt", Value: at.Add(-granularity)}}}},
	}}}
	if _, err := s.tokens.UpdateOne(ctx, filter, bson.D{{Key: "$set", Value: bson.D{{Key: "last_used_at", Value: at}}}}); err != nil {
		return fmt.Errorf("touch api token: %w", err)
	}
	return nil
}
