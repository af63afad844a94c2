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

// verificationDoc is an e-mail verification token mailed out, found by its hash, for the
// address it was sent to; the TTL index removes it once expires_at has passed.
type verificationDoc struct {
	Hash      string    `bson:"_id"`
	UserID    string    `bson:"user_id"`
	Email     string    `bson:"email"`
	CreatedAt time.Time `bson:"created_at"`
	ExpiresAt time.Time `bson:"expires_at"`
}

// InsertVerification stores a verification token's hash for userID's address email.
func (s *Store) InsertVerification(ctx context.Context, hash, userID, email string, now, expires time.Time) error {
	_, err := s.verifications.InsertOne(ctx, verificationDoc{Hash: hash, UserID: userID, Email: email, CreatedAt: now, ExpiresAt: expires})
	if err != nil {
		return fmt.Errorf("insert e-mail verification: %w", err)
	}
	return nil
}

// TakeVerification removes the verification token with hash, if still valid at now, and
// returns whose and for which address it was; accounts.ErrVerificationInvalid otherwise.
func (s *Store) TakeVerification(ctx context.Context, hash string, now time.Time) (string, string, error) {
	var d verificationDoc
	err := s.verifications.FindOneAndDelete(ctx, bson.D{{Key: "_id", Value: hash}, {Key: "expires_at", Value: bson.D{{Key: "$gt", Value: now}}}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return "", "", accounts.ErrVerificationInvalid
	}
	if err != nil {
		return "", "", fmt.Errorf("take e-mail verification: %w", err)
	}
	return d.UserID, d.Email, nil
}

// MarkVerified removes the account's unverified mark, if its address is still email, and
// raises its session epoch in the same update: every session signed in before ends.
func (s *Store) MarkVerified(ctx context.Context, userID, email string, now time.Time) (bool, error) {
	return s.updateOne(ctx, "mark e-mail verified", append(byID(userID), bson.E{Key: "email", Value: email}),
		bson.D{{Key: "$unset", Value: bson.D{{Key: "email_unverified", Value: ""}}}, {Key: "$set", Value: bson.D{{Key: "updated_at", Value: now}}},
			{Key: "$inc", Value: bson.D{{Key: "session_epoch", Value: int64(1)}}}})
}

// DeleteUnverified deletes the account if it is still unverified and was created before
// createdBefore (a stale registration whose address another registration takes), with its
// sessions; false when it is not such an account.
func (s *Store) DeleteUnverified(ctx context.Context, userID string, createdBefore time.Time) (bool, error) {
	res, err := s.users.DeleteOne(ctx, append(byID(userID), bson.E{Key: "email_unverified", Value: true},
		bson.E{Key: "created_at", Value: bson.D{{Key: "$lt", Value: createdBefore}}}))
	if err != nil {
		return false, fmt.Errorf("delete unverified account: %w", err)
	}
	if res.DeletedCount == 0 {
		return false, nil
	}
	if _, err := s.DeleteSessionsByUser(ctx, userID); err != nil {
		return true, err
	}
	return true, nil
}

// ForgetAccount removes the account's tokens, sessions, reset and verification links, and
// strips its login records down to the keyed hash of their address: the e-mail and the
// User-Agent go (the records of attempts at the address without the account too). Each step
// is idempotent; a retry finishes what a failure left.
func (s *Store) ForgetAccount(ctx context.Context, userID, email string) error {
	byUser := bson.D{{Key: "user_id", Value: userID}}
	for _, coll := range []*mongo.Collection{s.tokens, s.sessions, s.resets, s.verifications} {
		if _, err := coll.DeleteMany(ctx, byUser); err != nil {
			return fmt.Errorf("forget account: %w", err)
		}
	}
	records := bson.D{{Key: "$or", Value: bson.A{byUser, bson.D{{Key: "email", Value: email}}}}}
	if _, err := s.records.UpdateMany(ctx, records, bson.D{{Key: "$unset", Value: bson.D{{Key: "email", Value: ""}, {Key: "user_agent", Value: ""}}}}); err != nil {
		return fmt.Errorf("forget login records: %w", err)
	}
	return nil
}

// DeleteUser deletes the account's document.
func (s *Store) DeleteUser(ctx context.Context, userID string) error {
	if _, err := s.users.DeleteOne(ctx, byID(userID)); err != nil {
		return fmt.Errorf("delete user: %w", err)
	}
	return nil
}
