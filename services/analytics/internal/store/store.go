// Package store is the analytics service's MongoDB access. Clicks arrive at least once, so
// every write is idempotent, and no two writers ever update one document at once (FerretDB
// applies an update as read-modify-write and loses concurrent ones):
//
//   - link_clicks: the raw clicks, one insert each under the click's event id, so a
//     redelivered click is stored once. Each carries the storage slot (10 s of the
//     consumer's clock) it was stored in.
//   - link_visitors: one insert per (link, day, visitor hash), so a visitor counts once.
//   - link_daily, link_monthly, link_totals, owner_totals, global_totals:
//     rollups, written only by the fold (one leader at a time), which adds the clicks and
//     visitors of one closed slot at a time and marks each rollup with the slot, so adding a
//     slot again changes nothing. A link's answer reads the monthly ones, and the daily ones
//     of a month it cuts through (see monthly.go).
//
// No document holds a client address.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
)

// Collections the store owns.
const (
	Clicks      = "link_clicks"
	Visitors    = "link_visitors"
	Daily       = "link_daily"
	LinkTotals  = "link_totals"
	OwnerTotals = "owner_totals"
	// GlobalTotals holds the clicks of every link ("all") and per hour ("hour:<n>"), for the
	// admin overview: reading it costs the same whatever the number of links and clicks.
	GlobalTotals = "global_totals"
	state        = "analytics_state"
	purged       = "purged_links"
)

// SlotLength is the span of one storage slot.
const SlotLength = 10 * time.Second

// Slot is the storage slot of t.
func Slot(t time.Time) int64 { return t.UnixMilli() / SlotLength.Milliseconds() }

// Store reads and writes the analytics collections.
type Store struct {
	clicks, visitors, daily, links, owners, state *mongo.Collection
	purged, global                                *mongo.Collection
	monthly                                       *mongo.Collection
}

// New returns a Store on db after making sure its indexes exist.
func New(ctx context.Context, db *mongo.Database) (*Store, error) {
	idx := func(coll, name string, keys bson.D) mongodb.Index {
		return mongodb.Index{Collection: coll, Model: mongo.IndexModel{Keys: keys, Options: options.Index().SetName(name)}}
	}
	if err := mongodb.EnsureIndexes(ctx, db,
		idx(Clicks, "slot", bson.D{{Key: "slot", Value: 1}}),
		idx(Clicks, "link_day", bson.D{{Key: "link_id", Value: 1}, {Key: "day", Value: 1}}),
		idx(Clicks, "clicked_at", bson.D{{Key: "clicked_at", Value: 1}}),
		idx(Visitors, "slot", bson.D{{Key: "slot", Value: 1}}),
		idx(Visitors, "link", bson.D{{Key: "link_id", Value: 1}}),
		idx(Daily, "link_day", bson.D{{Key: "link_id", Value: 1}, {Key: "day", Value: 1}}),
		idx(Daily, "link_month", bson.D{{Key: "link_id", Value: 1}, {Key: "month", Value: 1}}),
		idx(LinkTotals, "owner", bson.D{{Key: "owner_id", Value: 1}}),
		idx(Monthly, "link_year", bson.D{{Key: "link_id", Value: 1}, {Key: "year", Value: 1}}),
	); err != nil {
		return nil, err
	}
	return &Store{clicks: db.Collection(Clicks), visitors: db.Collection(Visitors), daily: db.Collection(Daily),
		links: db.Collection(LinkTotals), owners: db.Collection(OwnerTotals), state: db.Collection(state),
		purged: db.Collection(purged), global: db.Collection(GlobalTotals),
		monthly: db.Collection(Monthly)}, nil
}

// clickDoc is one stored click: the spec's link_clicks record, without any address.
type clickDoc struct {
	ID         string    `bson:"_id"`
	LinkID     string    `bson:"link_id"`
	OwnerID    string    `bson:"owner_id"`
	ClickedAt  time.Time `bson:"clicked_at"`
	Day        string    `bson:"day"`
	Country    string    `bson:"country"`
	Referrer   string    `bson:"referrer"`
	DeviceType string    `bson:"device_type"`
	Browser    string    `bson:"browser"`
	OS         string    `bson:"os"`
	Slot       int64     `bson:"slot"`
}

type visitorDoc struct {
	ID     string `bson:"_id"` // link|day|hash
	LinkID string `bson:"link_id"`
	Day    string `bson:"day"`
	Slot   int64  `bson:"slot"`
}

// Day is the UTC date of t as the rollups key it.
func Day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// VisitorID names the (link, day, visitor) record of a click; "" when it has no visitor.
func VisitorID(c analytics.Click) string {
	if c.Visitor == "" {
		return ""
	}
	return c.LinkID + "|" + Day(c.ClickedAt) + "|" + c.Visitor
}

// Save stores clicks in the slot of now, and their visitors but those named in stored
// (known to be stored already: inserting them again is correct but slow on FerretDB, which
// retries a batch with a duplicate one document at a time). Clicks stored before (a
// redelivery) are kept as they were; saving the same clicks again is harmless, so a failed
// call may be retried.
func (s *Store) Save(ctx context.Context, clicks []analytics.Click, now time.Time, stored map[string]bool) error {
	if len(clicks) == 0 {
		return nil
	}
	slot := Slot(now)
	docs := make([]any, 0, len(clicks))
	var visitors []any
	seen := map[string]bool{}
	for _, c := range clicks {
		day := Day(c.ClickedAt)
		docs = append(docs, clickDoc{ID: c.EventID, LinkID: c.LinkID, OwnerID: c.OwnerID, ClickedAt: c.ClickedAt.UTC(), Day: day,
			Country: c.Country, Referrer: c.Referrer, DeviceType: c.DeviceType, Browser: c.Browser, OS: c.OS, Slot: slot})
		if id := VisitorID(c); id != "" && !stored[id] {
			if !seen[id] {
				seen[id] = true
				visitors = append(visitors, visitorDoc{ID: id, LinkID: c.LinkID, Day: day, Slot: slot})
			}
		}
	}
	// Visitors first: a click is folded only once it is stored, and its visitor must be
	// there by then.
	if err := insertNew(ctx, s.visitors, visitors); err != nil {
		return fmt.Errorf("store visitors: %w", err)
	}
	if err := insertNew(ctx, s.clicks, docs); err != nil {
		return fmt.Errorf("store clicks: %w", err)
	}
	return nil
}

// insertNew inserts docs, keeping the ones already stored as they are.
func insertNew(ctx context.Context, coll *mongo.Collection, docs []any) error {
	if len(docs) == 0 {
		return nil
	}
	_, err := coll.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && bwe.WriteConcernError == nil {
		for _, we := range bwe.WriteErrors {
			if !mongo.IsDuplicateKeyError(we) {
				return err
			}
		}
		return nil
	}
	return err
}

var (
	escaper   = strings.NewReplacer("%", "%25", ".", "%2E", "$", "%24")
	unescaper = strings.NewReplacer("%2E", ".", "%24", "$", "%25", "%")
)

// escapeKey makes a breakdown value usable as a field name: no dots, no leading $.
func escapeKey(v string) string { return escaper.Replace(v) }

func unescapeKey(k string) string { return unescaper.Replace(k) }
