package store

import (
	"context"
	"fmt"
	"regexp"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// Users returns one page of the accounts matching f, newest first, and their total.
func (s *Store) Users(ctx context.Context, f accounts.UserFilter, skip, limit int64) ([]accounts.User, int64, error) {
	docs, total, err := mongodb.FindPage[userDoc](ctx, s.users, "users", userFilter(f), mongodb.NewestFirst(), skip, limit)
	if err != nil {
		return nil, 0, err
	}
	out := make([]accounts.User, 0, len(docs))
	for _, d := range docs {
		out = append(out, fromUserDoc(d))
	}
	return out, total, nil
}

// CountUsers counts the accounts matching f.
func (s *Store) CountUsers(ctx context.Context, f accounts.UserFilter) (int64, error) {
	n, err := s.users.CountDocuments(ctx, userFilter(f))
	if err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

// userFilter is the filter of f. The public status is derived as User.StatusAt derives it:
// banned is stored; suspended is not banned with timeout_until after f.Now; active is
// neither, an ended timeout included.
func userFilter(f accounts.UserFilter) bson.D {
	filter := bson.D{}
	var or []bson.A
	if f.Role != "" {
		filter = append(filter, bson.E{Key: "role", Value: f.Role})
	}
	notBanned := bson.E{Key: "status", Value: bson.D{{Key: "$ne", Value: auth.StatusBanned}}}
	switch f.Status {
	case auth.StatusBanned:
		filter = append(filter, bson.E{Key: "status", Value: auth.StatusBanned})
	case auth.StatusSuspended:
		filter = append(filter, notBanned, bson.E{Key: "timeout_until", Value: bson.D{{Key: "$gt", Value: f.Now}}})
	case auth.StatusActive:
		filter = append(filter, notBanned)
		// {timeout_until: null} matches the field absent, as it is without a timeout.
		or = append(or, bson.A{bson.D{{Key: "timeout_until", Value: nil}},
			bson.D{{Key: "timeout_until", Value: bson.D{{Key: "$lte", Value: f.Now}}}}})
	}
	if f.Contains != "" {
		// A literal substring: every pattern character is escaped, so ".*", "(" or "$" are
		// plain text, never a pattern or an operator.
		re := bson.D{{Key: "$regex", Value: regexp.QuoteMeta(f.Contains)}, {Key: "$options", Value: "i"}}
		or = append(or, bson.A{bson.D{{Key: "email", Value: re}}, bson.D{{Key: "first_name", Value: re}},
			bson.D{{Key: "last_name", Value: re}}})
	}
	switch len(or) {
	case 1:
		filter = append(filter, bson.E{Key: "$or", Value: or[0]})
	case 2:
		filter = append(filter, bson.E{Key: "$and", Value: bson.A{bson.D{{Key: "$or", Value: or[0]}}, bson.D{{Key: "$or", Value: or[1]}}}})
	}
	return filter
}
