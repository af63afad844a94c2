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

// UpdateIf applies ch to the live link with code while its status is from, and returns the
// link written.
func (s *Store) UpdateIf(ctx context.Context, code, from string, ch links.Change) (links.Link, bool, error) {
	return s.apply(ctx, bson.D{{Key: "short_code", Value: code}, live(), {Key: "status", Value: from}}, func(l *links.Link) { ch.Apply(l) })
}

// Undo applies ch to the link with id only while it is at revision rev.
func (s *Store) Undo(ctx context.Context, id string, rev int64, ch links.Change) (bool, error) {
	_, ok, err := s.apply(ctx, bson.D{{Key: "_id", Value: id}, {Key: "rev", Value: rev}}, func(l *links.Link) { ch.Apply(l) })
	return ok, err
}

// DisableOwner disables every live enabled link of ownerID, one conditional write each,
// and returns their codes so that every cache can be told.
func (s *Store) DisableOwner(ctx context.Context, ownerID string, reason *string, at time.Time) ([]links.Link, error) {
	filter := bson.D{{Key: "owner_id", Value: ownerID}, live(), {Key: "status", Value: link.StatusActive}}
	ids, err := s.ids(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("find owner's links: %w", err)
	}
	var disabled []links.Link
	for _, id := range ids {
		l, ok, err := s.apply(ctx, append(bson.D{{Key: "_id", Value: id}}, filter...), func(l *links.Link) {
			l.Status, l.DisabledReason = link.StatusDisabled, reason
			l.Outbox = append(l.Outbox, links.NewEvent(link.EventDisabled, at))
		})
		if err != nil {
			return disabled, fmt.Errorf("disable owner's link: %w", err)
		}
		if ok {
			disabled = append(disabled, l)
		}
	}
	return disabled, nil
}

// MarkPurge marks the link with id for permanent deletion (and soft-deletes it, so every
// owner view drops it at once) unless a mark is there already, and returns the mark that
// holds; links.ErrNotFound when the link is gone.
func (s *Store) MarkPurge(ctx context.Context, id string, m links.PurgeMark) (links.PurgeMark, error) {
	marked, ok, err := s.apply(ctx, bson.D{{Key: "_id", Value: id}, notPurged()}, func(l *links.Link) {
		mark := m
		mark.At = m.At.UTC()
		l.Purge = &mark
		if l.DeletedAt == nil {
			l.DeletedAt = &mark.At
		}
		l.Outbox = append(l.Outbox, links.NewEvent(link.EventPurged, mark.At))
	})
	if err != nil {
		return links.PurgeMark{}, fmt.Errorf("mark link for deletion: %w", err)
	}
	if ok {
		return *marked.Purge, nil
	}
	// Marked already (or gone): the mark that holds is the stored one.
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
	return fromDocs(docs), nil
}

// DeleteByID removes the link with id, only once it is marked for deletion.
func (s *Store) DeleteByID(ctx context.Context, id string) error {
	if _, err := s.links.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "purge", Value: bson.D{{Key: "$exists", Value: true}}}}); err != nil {
		return fmt.Errorf("delete link: %w", err)
	}
	return nil
}
