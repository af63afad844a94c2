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
// and the global totals, and deletes it; then it clears the marks that guarded those
// subtractions. Each step is guarded, so a crash between them is healed by the next call;
// any replica may call it.
func (s *Store) Settle(ctx context.Context, now time.Time) error {
	for _, pass := range []struct {
		filter bson.D
		step   func(context.Context, purgeDoc) error
	}{
		{bson.D{{Key: "at", Value: bson.D{{Key: "$lte", Value: now.Add(-SettleAfter)}}}, {Key: "settled", Value: bson.D{{Key: "$exists", Value: false}}}}, s.settle},
		{bson.D{{Key: "settled", Value: true}, {Key: "cleared", Value: bson.D{{Key: "$exists", Value: false}}}}, s.clear},
	} {
		cur, err := s.purged.Find(ctx, pass.filter)
		if err != nil {
			return fmt.Errorf("read purges: %w", err)
		}
		var due []purgeDoc
		if err := cur.All(ctx, &due); err != nil {
			return fmt.Errorf("read purges: %w", err)
		}
		for _, p := range due {
			if err := pass.step(ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// purgeDoc is a purge's tombstone: the link's total and owner once recorded, and how far
// the purge has got.
type purgeDoc struct {
	ID      string `bson:"_id"`
	Total   *int64 `bson:"total"`
	OwnerID string `bson:"owner_id"`
}

// settle takes a purged link's total out of its owner's and the global totals. The total is
// recorded on the tombstone first, so that every later attempt subtracts the same amount;
// each subtraction is guarded by the link's id in the rollup's purges (a set that only the
// clearing pass shrinks, so no later write can make a rollup forget it).
func (s *Store) settle(ctx context.Context, p purgeDoc) error {
	if err := s.deleteLink(ctx, p.ID); err != nil {
		return err
	}
	if p.Total == nil {
		var total struct {
			Clicks  int64  `bson:"clicks"`
			OwnerID string `bson:"owner_id"`
		}
		err := s.rollups.FindOne(ctx, bson.D{{Key: "_id", Value: linkRollup(p.ID)}}).Decode(&total)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return fmt.Errorf("read purged total: %w", err)
		}
		if _, err := s.purged.UpdateOne(ctx, bson.D{{Key: "_id", Value: p.ID}, {Key: "total", Value: bson.D{{Key: "$exists", Value: false}}}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "total", Value: total.Clicks}, {Key: "owner_id", Value: total.OwnerID}}}}); err != nil {
			return fmt.Errorf("record purged total: %w", err)
		}
		if err := s.purged.FindOne(ctx, bson.D{{Key: "_id", Value: p.ID}}).Decode(&p); err != nil || p.Total == nil {
			return fmt.Errorf("read recorded purged total: %v", err)
		}
	}
	if *p.Total != 0 {
		for _, id := range purgeTargets(p) {
			_, err := s.rollups.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "purges", Value: bson.D{{Key: "$ne", Value: p.ID}}}},
				bson.D{{Key: "$inc", Value: bson.D{{Key: "clicks", Value: -*p.Total}}}, {Key: "$push", Value: bson.D{{Key: "purges", Value: p.ID}}}})
			if err != nil {
				return fmt.Errorf("take purged total from %s: %w", id, err)
			}
		}
	}
	if _, err := s.rollups.DeleteOne(ctx, bson.D{{Key: "_id", Value: linkRollup(p.ID)}}); err != nil {
		return fmt.Errorf("delete purged total: %w", err)
	}
	if _, err := s.purged.UpdateOne(ctx, bson.D{{Key: "_id", Value: p.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "settled", Value: true}}}}); err != nil {
		return fmt.Errorf("mark purge settled: %w", err)
	}
	return s.clear(ctx, p)
}

// clear removes a settled purge's guard marks from the totals it was taken out of: the
// purge no longer runs, so they guard nothing.
func (s *Store) clear(ctx context.Context, p purgeDoc) error {
	for _, id := range purgeTargets(p) {
		if _, err := s.rollups.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$pull", Value: bson.D{{Key: "purges", Value: p.ID}}}}); err != nil {
			return fmt.Errorf("clear purge mark from %s: %w", id, err)
		}
	}
	if _, err := s.purged.UpdateOne(ctx, bson.D{{Key: "_id", Value: p.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "cleared", Value: true}}}}); err != nil {
		return fmt.Errorf("mark purge cleared: %w", err)
	}
	return nil
}

// purgeTargets are the totals a purged link's total is taken out of.
func purgeTargets(p purgeDoc) []string {
	out := []string{globalAll}
	if p.OwnerID != "" {
		out = append(out, ownerRollup(p.OwnerID))
	}
	return out
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
