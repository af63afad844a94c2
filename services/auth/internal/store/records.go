package store

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

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
}

// InsertLoginRecord stores one login attempt.
func (s *Store) InsertLoginRecord(ctx context.Context, r accounts.LoginRecord) error {
	if _, err := s.records.InsertOne(ctx, recordDoc(r)); err != nil {
		return fmt.Errorf("insert login record: %w", err)
	}
	return nil
}

// sweepBatch bounds one delete of old login records. A backlog (the first sweep after
// retention was introduced) is deleted in slices, so each statement stays short and the
// sweep keeps what it deleted even when its time runs out.
const sweepBatch = 500

// DeleteLoginRecordsBefore removes the login records created before cutoff and says how
// many it removed; on error, the count is what was removed before it.
func (s *Store) DeleteLoginRecordsBefore(ctx context.Context, cutoff time.Time) (int64, error) {
	filter := bson.D{{Key: "created_at", Value: bson.D{{Key: "$lt", Value: cutoff}}}}
	opts := options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}).SetLimit(sweepBatch)
	var total int64
	for {
		cur, err := s.records.Find(ctx, filter, opts)
		if err != nil {
			return total, fmt.Errorf("find old login records: %w", err)
		}
		var ids []struct {
			ID string `bson:"_id"`
		}
		if err := cur.All(ctx, &ids); err != nil {
			return total, fmt.Errorf("read old login records: %w", err)
		}
		if len(ids) == 0 {
			return total, nil
		}
		in := make(bson.A, len(ids))
		for i, d := range ids {
			in[i] = d.ID
		}
		res, err := s.records.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}})
		if err != nil {
			return total, fmt.Errorf("delete old login records: %w", err)
		}
		total += res.DeletedCount
		if len(ids) < sweepBatch {
			return total, nil
		}
	}
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
		r := accounts.LoginRecord(d)
		r.CreatedAt = d.CreatedAt.UTC()
		out = append(out, r)
	}
	return out, total, nil
}
