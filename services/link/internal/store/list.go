package store

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"golang.org/x/sync/errgroup"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// List returns a page of q's links, newest first with ties in id order, and how many match:
// a count and a page, both on the owner's (or the created) index.
func (s *Store) List(ctx context.Context, q links.ListQuery) ([]links.Link, int64, error) {
	docs, total, err := mongodb.FindPage[doc](ctx, s.links, "links", listFilter(q), mongodb.NewestFirst(), q.Skip, q.Limit)
	if err != nil {
		return nil, 0, err
	}
	return fromDocs(docs), total, nil
}

// Overview counts q's owner's live links in all, expired and disabled, and returns the n
// newest: three counts and a page on the owner's index, read at once.
func (s *Store) Overview(ctx context.Context, q links.ListQuery, n int64) (links.Overview, error) {
	var out links.Overview
	var g errgroup.Group
	g.Go(func() error {
		return s.count(ctx, map[*int64]bson.D{
			&out.Total:    listFilter(withState(q, links.StateAll)),
			&out.Expired:  listFilter(withState(q, links.StateExpired)),
			&out.Disabled: listFilter(withState(q, links.StateDisabled)),
		})
	})
	g.Go(func() error {
		docs, err := mongodb.Find[doc](ctx, s.links, "links", listFilter(withState(q, links.StateAll)), mongodb.NewestFirst(), 0, n)
		out.Newest = fromDocs(docs)
		return err
	})
	err := g.Wait()
	return out, err
}

// CountStates counts every stored link not being purged by state as of now: five counts
// read at once. Active, expired and disabled walk the state index; all and deleted read
// every link (an admin page).
func (s *Store) CountStates(ctx context.Context, now time.Time) (link.LinkCounts, error) {
	var out link.LinkCounts
	q := links.ListQuery{AnyOwner: true, Now: now}
	err := s.count(ctx, map[*int64]bson.D{
		&out.Total:    {notPurged()},
		&out.Deleted:  {{Key: "deleted_at", Value: bson.D{{Key: "$exists", Value: true}}}, notPurged()},
		&out.Active:   listFilter(withState(q, links.StateActive)),
		&out.Expired:  listFilter(withState(q, links.StateExpired)),
		&out.Disabled: listFilter(withState(q, links.StateDisabled)),
	})
	return out, err
}

// count counts the links each filter matches into its counter, all at once.
func (s *Store) count(ctx context.Context, filters map[*int64]bson.D) error {
	var g errgroup.Group
	for into, f := range filters {
		g.Go(func() (err error) {
			if *into, err = s.links.CountDocuments(ctx, f); err != nil {
				return fmt.Errorf("count links: %w", err)
			}
			return nil
		})
	}
	return g.Wait()
}

func withState(q links.ListQuery, state string) links.ListQuery {
	q.State = state
	return q
}

func fromDocs(docs []doc) []links.Link {
	out := make([]links.Link, len(docs))
	for i, d := range docs {
		out[i] = fromDoc(d)
	}
	return out
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
