package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// SettleAfter is how long after a purge its link's totals are taken out of its owner's and
// the global totals: longer than any batch that read the link as not purged may still take
// to be applied (the consumer bounds a batch's writes well inside it), so the link's total
// no longer moves when it is read.
const SettleAfter = time.Minute

// Purge deletes every click, visitor, daily and monthly rollup of linkID and leaves a
// tombstone, so that nothing the stream still delivers for it is counted again. Its total
// leaves its owner's and the global totals with Settle. Purging again does nothing more.
func (s *Store) Purge(ctx context.Context, linkID string) error {
	_, err := s.purged.InsertOne(ctx, bson.D{{Key: "_id", Value: linkID}, {Key: "at", Value: time.Now().UTC()}})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("purge %s: %w", linkID, err)
	}
	return s.deleteLink(ctx, linkID)
}

// deleteLink deletes what a link's clicks left but its total.
func (s *Store) deleteLink(ctx context.Context, link string) error {
	for _, del := range []struct {
		coll   *mongo.Collection
		filter bson.D
	}{
		{s.clicks, bson.D{{Key: "link_id", Value: link}}},
		{s.visitors, prefixRange(link + "|")},
		{s.rollups, prefixRange(dayRollup(link, ""))},
		{s.rollups, prefixRange(monthRollup(link, ""))},
	} {
		if _, err := del.coll.DeleteMany(ctx, del.filter); err != nil {
			return fmt.Errorf("purge %s from %s: %w", link, del.coll.Name(), err)
		}
	}
	return nil
}

// Settle finishes the purges older than SettleAfter at now: it deletes again what a batch
// in flight during the purge may have written, takes each link's total out of its owner's
// and the global totals, and deletes it. Each step is guarded, so a crash between them is
// healed by the next call; any replica may call it.
func (s *Store) Settle(ctx context.Context, now time.Time) error {
	cur, err := s.purged.Find(ctx, bson.D{{Key: "at", Value: bson.D{{Key: "$lte", Value: now.Add(-SettleAfter)}}},
		{Key: "settled", Value: bson.D{{Key: "$exists", Value: false}}}})
	if err != nil {
		return fmt.Errorf("read purges: %w", err)
	}
	var due []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &due); err != nil {
		return fmt.Errorf("read purges: %w", err)
	}
	for _, p := range due {
		if err := s.settle(ctx, p.ID); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) settle(ctx context.Context, link string) error {
	if err := s.deleteLink(ctx, link); err != nil {
		return err
	}
	var total struct {
		Clicks  int64  `bson:"clicks"`
		OwnerID string `bson:"owner_id"`
	}
	err := s.rollups.FindOne(ctx, bson.D{{Key: "_id", Value: linkRollup(link)}}).Decode(&total)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return fmt.Errorf("read purged total: %w", err)
	}
	if err == nil && total.Clicks != 0 {
		guard := "purge|" + link
		targets := []string{globalAll}
		if total.OwnerID != "" {
			targets = append(targets, ownerRollup(total.OwnerID))
		}
		for _, id := range targets {
			_, err := s.rollups.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "applied", Value: bson.D{{Key: "$ne", Value: guard}}}},
				bson.D{{Key: "$inc", Value: bson.D{{Key: "clicks", Value: -total.Clicks}}},
					{Key: "$push", Value: bson.D{{Key: "applied", Value: bson.D{{Key: "$each", Value: bson.A{guard}}, {Key: "$slice", Value: -guardWindow}}}}}})
			if err != nil {
				return fmt.Errorf("take purged total from %s: %w", id, err)
			}
		}
	}
	if _, err := s.rollups.DeleteOne(ctx, bson.D{{Key: "_id", Value: linkRollup(link)}}); err != nil {
		return fmt.Errorf("delete purged total: %w", err)
	}
	if _, err := s.purged.UpdateOne(ctx, bson.D{{Key: "_id", Value: link}}, bson.D{{Key: "$set", Value: bson.D{{Key: "settled", Value: true}}}}); err != nil {
		return fmt.Errorf("mark purge settled: %w", err)
	}
	return nil
}

// Purged are the links among links that were purged: their clicks are neither stored nor
// counted.
func (s *Store) Purged(ctx context.Context, links map[string]bool) (map[string]bool, error) {
	out := map[string]bool{}
	if len(links) == 0 {
		return out, nil
	}
	ids := make([]string, 0, len(links))
	for l := range links {
		ids = append(ids, l)
	}
	cur, err := s.purged.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return nil, fmt.Errorf("read purged links: %w", err)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read purged links: %w", err)
	}
	for _, d := range docs {
		out[d.ID] = true
	}
	return out, nil
}
