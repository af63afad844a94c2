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
// An owner's come from the owner's packs; anyone's from two queries on the created index.
func (s *Store) List(ctx context.Context, q links.ListQuery) ([]links.Link, int64, error) {
	if ownersView(q) {
		all, ok, err := s.ownerLinks(ctx, q.OwnerID)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			sel := selectLinks(all, q)
			return page(sel, q.Skip, q.Limit), int64(len(sel)), nil
		}
	}
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

// Overview counts q's owner's live links in all, expired and disabled, and returns the n
// newest, from one read of the owner's packs once they are ready.
func (s *Store) Overview(ctx context.Context, q links.ListQuery, n int64) (links.Overview, error) {
	var out links.Overview
	var all []*links.Link
	ok := false
	if ownersView(q) {
		var err error
		if all, ok, err = s.ownerLinks(ctx, q.OwnerID); err != nil {
			return out, err
		}
	}
	if !ok {
		// Three counts and a page, each a query of its own.
		for _, c := range []struct {
			state string
			into  *int64
		}{{links.StateAll, &out.Total}, {links.StateExpired, &out.Expired}, {links.StateDisabled, &out.Disabled}} {
			q.State = c.state
			var err error
			if *c.into, err = s.links.CountDocuments(ctx, listFilter(q)); err != nil {
				return out, fmt.Errorf("count links: %w", err)
			}
		}
		q.State = links.StateAll
		docs, err := mongodb.Find[doc](ctx, s.links, "links", listFilter(q), mongodb.NewestFirst(), 0, n)
		if err != nil {
			return out, err
		}
		for _, d := range docs {
			out.Newest = append(out.Newest, fromDoc(d))
		}
		return out, nil
	}
	q.State = links.StateAll
	live := selectLinks(all, q)
	out.Total = int64(len(live))
	for _, l := range live {
		switch l.State(q.Now) {
		case links.StateExpired:
			out.Expired++
		case links.StateDisabled:
			out.Disabled++
		}
	}
	out.Newest = page(live, 0, n)
	return out, nil
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
