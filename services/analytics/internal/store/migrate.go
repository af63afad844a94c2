package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
)

// Schema 0 kept each kind of rollup in its own collection, written by a fold of 10-second
// storage slots ("slot" on raw clicks and visitors, "last_slot" on rollups, the fold's
// position in analytics_state), and swept raw data by age.
var slotCollections = []struct {
	name string
	id   func(doc bson.M) string
}{
	{"link_daily", func(d bson.M) string { return dayRollup(str(d["link_id"]), str(d["day"])) }},
	{"link_monthly", func(d bson.M) string { return monthRollup(str(d["link_id"]), str(d["month"])) }},
	{"link_totals", func(d bson.M) string { d["link_id"] = d["_id"]; return linkRollup(str(d["_id"])) }},
	{"owner_totals", func(d bson.M) string { delete(d, "purged"); return ownerRollup(str(d["_id"])) }},
	{"global_totals", func(d bson.M) string { delete(d, "last_purge"); return "g|" + str(d["_id"]) }},
}

// foldState is the schema-0 collection of the fold's position.
var foldState = "analytics_state"

const slotLength = 10 * time.Second

func str(v any) string { s, _ := v.(string); return s }

// slotBatch is the batch id standing for a schema-0 slot: the same on every replica.
func slotBatch(slot int64) bson.ObjectID {
	var id bson.ObjectID
	binary.BigEndian.PutUint32(id[:4], uint32(slot*int64(slotLength/time.Second)))
	binary.BigEndian.PutUint64(id[4:], uint64(slot))
	return id
}

// SchemaVersion is the version of the schema this store reads.
const SchemaVersion = 1

// migrate brings db to the current schema.
func (s *Store) migrate(ctx context.Context, db *mongo.Database) error {
	return mongodb.Migrate(ctx, db, mongodb.Step{Version: SchemaVersion, Name: "rollups applied per batch", Run: s.fromSlots})
}

// fromSlots moves schema 0 to batches: it copies the rollups into the rollups collection,
// those holding the slot the fold stopped in marked with that slot's batch; adds the slots
// not folded yet, each as its own batch; gives raw clicks and visitors their expiry; and
// drops what is no longer used. Each part is idempotent, and the fold's position is dropped
// last, so a replica running it again, or beside another one, counts nothing twice.
func (s *Store) fromSlots(ctx context.Context, db *mongo.Database) error {
	var state struct {
		Next int64 `bson:"next_slot"`
	}
	err := db.Collection(foldState).FindOne(ctx, bson.D{{Key: "_id", Value: "fold"}}).Decode(&state)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return fmt.Errorf("read fold state: %w", err)
	}
	for _, c := range slotCollections {
		if err := s.copyRollups(ctx, db.Collection(c.name), c.id, state.Next); err != nil {
			return err
		}
	}
	if err := s.addUnfolded(ctx, state.Next); err != nil {
		return err
	}
	ms := s.retention.Milliseconds()
	if _, err := s.clicks.UpdateMany(ctx, bson.D{{Key: "expires_at", Value: bson.D{{Key: "$exists", Value: false}}}}, mongo.Pipeline{
		{{Key: "$set", Value: bson.D{{Key: "expires_at", Value: bson.D{{Key: "$add", Value: bson.A{"$clicked_at", ms}}}}}}},
		{{Key: "$unset", Value: "slot"}},
	}); err != nil {
		return fmt.Errorf("set click expiry: %w", err)
	}
	if _, err := s.visitors.UpdateMany(ctx, bson.D{{Key: "expires_at", Value: bson.D{{Key: "$exists", Value: false}}}}, mongo.Pipeline{
		{{Key: "$set", Value: bson.D{{Key: "expires_at", Value: bson.D{{Key: "$add", Value: bson.A{
			bson.D{{Key: "$toDate", Value: bson.D{{Key: "$multiply", Value: bson.A{"$slot", slotLength.Milliseconds()}}}}}, ms}}}}}}},
		{{Key: "$unset", Value: bson.A{"slot", "link_id", "day"}}},
	}); err != nil {
		return fmt.Errorf("set visitor expiry: %w", err)
	}
	if _, err := s.purged.UpdateMany(ctx, bson.D{{Key: "applied", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "settled", Value: true}}}}); err != nil {
		return fmt.Errorf("mark settled purges: %w", err)
	}
	for _, step := range []func(context.Context, *mongo.Database) error{
		mongodb.DropIndexes(Clicks, "slot", "clicked_at"),
		mongodb.DropIndexes(Visitors, "slot", "link"),
		mongodb.DropCollections("link_daily", "link_monthly", "link_totals", "owner_totals", "global_totals", foldState),
	} {
		if err := step(ctx, db); err != nil {
			return err
		}
	}
	return nil
}

// copyRollups copies coll's rollups under their new ids, those a fold of slot next or later
// wrote marked with slot next's batch; a rollup copied before is left as it is.
func (s *Store) copyRollups(ctx context.Context, coll *mongo.Collection, id func(bson.M) string, next int64) error {
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		return fmt.Errorf("read %s: %w", coll.Name(), err)
	}
	defer cur.Close(ctx)
	var docs []any
	flush := func() error {
		_, err := insertNew(ctx, s.rollups, docs)
		docs = docs[:0]
		return err
	}
	for cur.Next(ctx) {
		var d bson.M
		if err := cur.Decode(&d); err != nil {
			return fmt.Errorf("read %s: %w", coll.Name(), err)
		}
		d["_id"] = id(d)
		if last, ok := d["last_slot"].(int64); ok && last >= next {
			d["applied"] = bson.A{slotBatch(next)}
		}
		delete(d, "last_slot")
		if docs = append(docs, d); len(docs) == 1000 {
			if err := flush(); err != nil {
				return fmt.Errorf("copy %s: %w", coll.Name(), err)
			}
		}
	}
	if err := cur.Err(); err != nil {
		return fmt.Errorf("read %s: %w", coll.Name(), err)
	}
	if err := flush(); err != nil {
		return fmt.Errorf("copy %s: %w", coll.Name(), err)
	}
	return nil
}

// addUnfolded adds the clicks and visitors stored in slot next and later, but those of
// purged links, each slot as its own batch.
func (s *Store) addUnfolded(ctx context.Context, next int64) error {
	late := bson.D{{Key: "slot", Value: bson.D{{Key: "$gte", Value: next}}}}
	cur, err := s.clicks.Find(ctx, late)
	if err != nil {
		return fmt.Errorf("read unfolded clicks: %w", err)
	}
	var raw []bson.Raw
	if err := cur.All(ctx, &raw); err != nil {
		return fmt.Errorf("read unfolded clicks: %w", err)
	}
	clicks := make([]clickDoc, len(raw))
	clickSlots := make([]int64, len(raw))
	for i, r := range raw {
		var slot struct {
			Slot int64 `bson:"slot"`
		}
		if err := errors.Join(bson.Unmarshal(r, &clicks[i]), bson.Unmarshal(r, &slot)); err != nil {
			return fmt.Errorf("read unfolded clicks: %w", err)
		}
		clickSlots[i] = slot.Slot
	}
	cur, err = s.visitors.Find(ctx, late)
	if err != nil {
		return fmt.Errorf("read unfolded visitors: %w", err)
	}
	var visitors []struct {
		ID   string `bson:"_id"`
		Slot int64  `bson:"slot"`
	}
	if err := cur.All(ctx, &visitors); err != nil {
		return fmt.Errorf("read unfolded visitors: %w", err)
	}
	links := map[string]bool{}
	for _, c := range clicks {
		links[c.LinkID] = true
	}
	for _, v := range visitors {
		links[strings.SplitN(v.ID, "|", 2)[0]] = true
	}
	gone, err := s.Purged(ctx, links)
	if err != nil {
		return err
	}
	slots := map[int64]tally{}
	of := func(slot int64) tally {
		if slots[slot] == nil {
			slots[slot] = tally{}
		}
		return slots[slot]
	}
	for i := range clicks {
		if c := &clicks[i]; !gone[c.LinkID] {
			of(clickSlots[i]).addClick(c, false)
		}
	}
	for _, v := range visitors {
		if parts := strings.SplitN(v.ID, "|", 3); len(parts) == 3 && !gone[parts[0]] {
			of(v.Slot).addDay(parts[0], "", parts[1], 0, 1, func(func(string, string, int64)) {})
		}
	}
	for slot, t := range slots {
		b := slotBatch(slot)
		if err := s.write(ctx, t.models(&b)); err != nil {
			return err
		}
	}
	return nil
}
