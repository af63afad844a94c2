package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// notPurged matches links no permanent deletion has started on.
func notPurged() bson.E { return bson.E{Key: "purge", Value: bson.D{{Key: "$exists", Value: false}}} }

// UpdateIf applies ch to the live link with code while its status is from, in one
// conditional update.
func (s *Store) UpdateIf(ctx context.Context, code, from string, ch links.Change) (bool, error) {
	return s.update(ctx, bson.D{{Key: "short_code", Value: code}, live(), {Key: "status", Value: from}}, ch)
}

// DisableOwner disables every live enabled link of ownerID and returns their codes. The
// codes are read first so that every cache can be told; a link created between the read and
// the update is disabled too but not named, and its caches hold nothing older than its
// creation's invalidation.
func (s *Store) DisableOwner(ctx context.Context, ownerID string, reason *string) ([]string, error) {
	filter := bson.D{{Key: "owner_id", Value: ownerID}, live(), {Key: "status", Value: link.StatusActive}}
	cur, err := s.links.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "short_code", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("find owner's links: %w", err)
	}
	var docs []struct {
		Code string `bson:"short_code"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read owner's links: %w", err)
	}
	set := bson.D{{Key: "status", Value: link.StatusDisabled}}
	if reason != nil {
		set = append(set, bson.E{Key: "disabled_reason", Value: *reason})
	}
	if _, err := s.links.UpdateMany(ctx, filter, bson.D{{Key: "$set", Value: set}}); err != nil {
		return nil, fmt.Errorf("disable owner's links: %w", err)
	}
	codes := make([]string, len(docs))
	for i, d := range docs {
		codes[i] = d.Code
	}
	return codes, nil
}

// MarkPurge marks the link with id for permanent deletion unless a mark is there already,
// and returns the mark that holds; links.ErrNotFound when the link is gone.
func (s *Store) MarkPurge(ctx context.Context, id string, m links.PurgeMark) (links.PurgeMark, error) {
	mark := purgeDoc{By: m.By, Role: m.Role, IPHash: m.IPHash, UserAgent: m.UserAgent, At: m.At.UTC()}
	_, err := s.links.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, notPurged()}, bson.D{{Key: "$set", Value: bson.D{{Key: "purge", Value: mark}}}})
	if err != nil {
		return links.PurgeMark{}, fmt.Errorf("mark link for deletion: %w", err)
	}
	var d doc
	if err := s.links.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
		if errors.Is(err, mongo.ErrNoDocuments) {
			return links.PurgeMark{}, links.ErrNotFound
		}
		return links.PurgeMark{}, fmt.Errorf("read link being deleted: %w", err)
	}
	if d.Purge == nil {
		return links.PurgeMark{}, fmt.Errorf("mark link for deletion: mark of %s not stored", id)
	}
	// A link being deleted is soft-deleted too, so every owner view drops it at once.
	if _, err := s.links.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, live()},
		bson.D{{Key: "$set", Value: bson.D{{Key: "deleted_at", Value: d.Purge.At}}}}); err != nil {
		return links.PurgeMark{}, fmt.Errorf("mark link for deletion: %w", err)
	}
	return *fromPurgeDoc(d.Purge), nil
}

// PurgesDue returns up to limit links marked for deletion before before, oldest first.
func (s *Store) PurgesDue(ctx context.Context, before time.Time, limit int64) ([]links.Link, error) {
	cur, err := s.links.Find(ctx, bson.D{{Key: "purge.at", Value: bson.D{{Key: "$lt", Value: before}}}},
		options.Find().SetSort(bson.D{{Key: "purge.at", Value: 1}}).SetLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("find links being deleted: %w", err)
	}
	var docs []doc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read links being deleted: %w", err)
	}
	out := make([]links.Link, len(docs))
	for i, d := range docs {
		out[i] = fromDoc(d)
	}
	return out, nil
}

// DeleteByID removes the link with id, only once it is marked for deletion.
func (s *Store) DeleteByID(ctx context.Context, id string) error {
	if _, err := s.links.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "purge", Value: bson.D{{Key: "$exists", Value: true}}}}); err != nil {
		return fmt.Errorf("delete link: %w", err)
	}
	return nil
}

// CountStates counts the stored links by state as of now, links being purged left out: one
// count per state, each a filter the list uses too.
func (s *Store) CountStates(ctx context.Context, now time.Time) (link.LinkCounts, error) {
	var out link.LinkCounts
	for _, c := range []struct {
		into *int64
		q    links.ListQuery
		del  bool
	}{
		{&out.Active, links.ListQuery{AnyOwner: true, State: links.StateActive, Now: now}, false},
		{&out.Expired, links.ListQuery{AnyOwner: true, State: links.StateExpired, Now: now}, false},
		{&out.Disabled, links.ListQuery{AnyOwner: true, State: links.StateDisabled, Now: now}, false},
		{&out.Deleted, links.ListQuery{}, true},
	} {
		filter := listFilter(c.q)
		if c.del {
			filter = bson.D{{Key: "deleted_at", Value: bson.D{{Key: "$exists", Value: true}}}, notPurged()}
		}
		n, err := s.links.CountDocuments(ctx, filter)
		if err != nil {
			return link.LinkCounts{}, fmt.Errorf("count links: %w", err)
		}
		*c.into = n
	}
	out.Total = out.Active + out.Expired + out.Disabled + out.Deleted
	return out, nil
}
