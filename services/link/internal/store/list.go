package store

import (
	"context"
	"fmt"
	"regexp"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// List returns a page of q's links, newest first with ties in id order, and how many match.
// Both queries read the owner_created index.
func (s *Store) List(ctx context.Context, q links.ListQuery) ([]links.Link, int64, error) {
	docs, total, err := mongodb.FindPage[doc](ctx, s.links, "links", listFilter(q), mongodb.NewestFirst(), q.Skip, q.Limit)
	if err != nil {
		return nil, 0, err
	}
	out := make([]links.Link, 0, len(docs))
	for _, d := range docs {
		out = append(out, fromDoc(d))
	}
	return out, total, nil
}

// Newest returns the page of q's links that List returns, without counting how many match.
func (s *Store) Newest(ctx context.Context, q links.ListQuery) ([]links.Link, error) {
	docs, err := mongodb.Find[doc](ctx, s.links, "links", listFilter(q), mongodb.NewestFirst(), q.Skip, q.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]links.Link, 0, len(docs))
	for _, d := range docs {
		out = append(out, fromDoc(d))
	}
	return out, nil
}

// Count counts q's links on the owner_created index.
func (s *Store) Count(ctx context.Context, q links.ListQuery) (int64, error) {
	n, err := s.links.CountDocuments(ctx, listFilter(q))
	if err != nil {
		return 0, fmt.Errorf("count links: %w", err)
	}
	return n, nil
}

// listFilter is the filter of q: the owner's (or anyone's) live links in q's state, with
// q's substring; soft-deleted ones too when q includes them, links being purged never.
func listFilter(q links.ListQuery) bson.D {
	f := bson.D{}
	if !q.AnyOwner {
		f = append(f, bson.E{Key: "owner_id", Value: q.OwnerID})
	}
	if q.IncludeDeleted {
		f = append(f, notPurged())
	} else {
		f = append(f, live())
	}
	notExpired := bson.A{bson.D{{Key: "auto_renew", Value: 1}}, bson.D{{Key: "expires_at", Value: bson.D{{Key: "$gt", Value: q.Now}}}}}
	var or []bson.A
	switch q.State {
	case links.StateDisabled:
		f = append(f, bson.E{Key: "status", Value: link.StatusDisabled})
	case links.StateActive:
		f = append(f, bson.E{Key: "status", Value: link.StatusActive})
		or = append(or, notExpired)
	case links.StateExpired:
		f = append(f, bson.E{Key: "status", Value: link.StatusActive}, bson.E{Key: "auto_renew", Value: 0},
			bson.E{Key: "expires_at", Value: bson.D{{Key: "$lte", Value: q.Now}}})
	}
	if q.Contains != "" {
		// A literal substring: every pattern character is escaped, so ".*", "(" or "$" are
		// plain text, never a pattern or an operator.
		pattern := regexp.QuoteMeta(q.Contains)
		or = append(or, bson.A{
			bson.D{{Key: "short_code", Value: bson.D{{Key: "$regex", Value: pattern}}}},
			bson.D{{Key: "destination_url", Value: bson.D{{Key: "$regex", Value: pattern}}}},
		})
	}
	switch len(or) {
	case 1:
		f = append(f, bson.E{Key: "$or", Value: or[0]})
	case 2:
		f = append(f, bson.E{Key: "$and", Value: bson.A{bson.D{{Key: "$or", Value: or[0]}}, bson.D{{Key: "$or", Value: or[1]}}}})
	}
	return f
}
