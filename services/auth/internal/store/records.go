package store

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// recordDoc is a stored login record: an HMAC of the client IP, never the IP.
type recordDoc struct {
	ID        string    `bson:"_id"`
	UserID    string    `bson:"user_id,omitempty"`
	Email     string    `bson:"email"`
	Success   bool      `bson:"success"`
	Method    string    `bson:"method"`
	Reason    string    `bson:"reason,omitempty"`
	IPHash    string    `bson:"ip_hash"`
	UserAgent string    `bson:"user_agent"`
	CreatedAt time.Time `bson:"created_at"`
	// ExpiresAt is when the TTL index deletes the record: CreatedAt plus the retention in
	// force when it was written.
	ExpiresAt time.Time `bson:"expires_at"`
}

// InsertLoginRecord stores one login attempt.
func (s *Store) InsertLoginRecord(ctx context.Context, r accounts.LoginRecord) error {
	d := recordDoc{ID: r.ID, UserID: r.UserID, Email: r.Email, Success: r.Success, Method: r.Method, Reason: r.Reason,
		IPHash: r.IPHash, UserAgent: r.UserAgent, CreatedAt: r.CreatedAt, ExpiresAt: r.CreatedAt.Add(s.recordRetention)}
	if _, err := s.records.InsertOne(ctx, d); err != nil {
		return fmt.Errorf("insert login record: %w", err)
	}
	return nil
}

// LoginRecords returns one page of the records matching f, newest first, and their total.
func (s *Store) LoginRecords(ctx context.Context, f accounts.RecordFilter, skip, limit int64) ([]accounts.LoginRecord, int64, error) {
	filter := bson.D{}
	if f.UserID != "" {
		filter = append(filter, bson.E{Key: "user_id", Value: f.UserID})
	}
	if f.Email != "" {
		filter = append(filter, bson.E{Key: "email", Value: f.Email})
	}
	if f.Success != nil {
		filter = append(filter, bson.E{Key: "success", Value: *f.Success})
	}
	docs, total, err := mongodb.FindPage[recordDoc](ctx, s.records, "login records", filter, mongodb.NewestFirst(), skip, limit)
	if err != nil {
		return nil, 0, err
	}
	out := make([]accounts.LoginRecord, 0, len(docs))
	for _, d := range docs {
		out = append(out, accounts.LoginRecord{ID: d.ID, UserID: d.UserID, Email: d.Email, Success: d.Success,
			Method: d.Method, Reason: d.Reason, IPHash: d.IPHash, UserAgent: d.UserAgent, CreatedAt: d.CreatedAt.UTC()})
	}
	return out, total, nil
}
