// Package store is the analytics service's MongoDB access. Clicks arrive at least once and
// several consumers apply batches at once, so every write is idempotent and every rollup
// update is one atomic, guarded $inc:
//
//   - link_clicks: the raw clicks, one insert each under the click's event id, so a
//     redelivered click is stored once, in the batch of the consumer that stored it. Each
//     expires LINKMESH_CLICK_RETENTION after it was clicked (a TTL index on expires_at).
//   - click_batches: one record per batch of clicks, open until the batch is in the
//     rollups (see batch.go).
//   - link_visitors: one document per (link, day, visitor hash) naming the click that met
//     the visitor first, so a visitor counts once however often its clicks are applied.
//   - rollups: every count the answers read, one document each: a link's day, a link's
//     month, a link's all-time total, an owner's total, the global and hourly totals (see
//     rollup.go). A batch adds to them with one bulkWrite.
//   - purged_links: tombstones of purged links, so that a late click of one is not counted.
//
// No document holds a client address.
package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"golang.org/x/sync/errgroup"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
)

// Collections the store owns.
const (
	Clicks   = "link_clicks"
	Batches  = "click_batches"
	Visitors = "link_visitors"
	Rollups  = "rollups"
	purged   = "purged_links"
)

// batchKeep is how long a batch's record is kept after it was stored: far longer than a
// batch stays open, and than its clicks may be delivered again.
const batchKeep = 7 * 24 * time.Hour

// Store reads and writes the analytics collections.
type Store struct {
	clicks, batches, visitors, rollups, purged *mongo.Collection
	retention                                  time.Duration
	inserted                                   insertedBatches
}

// New returns a Store on db after bringing its schema up to date and making sure its
// indexes exist. Raw clicks and visitors are kept for retention after their click.
func New(ctx context.Context, db *mongo.Database, retention time.Duration) (*Store, error) {
	s := &Store{clicks: db.Collection(Clicks), batches: db.Collection(Batches), visitors: db.Collection(Visitors), rollups: db.Collection(Rollups),
		purged: db.Collection(purged), retention: retention}
	if err := s.migrate(ctx, db); err != nil {
		return nil, err
	}
	idx := func(coll, name string, keys bson.D, opts *options.IndexOptionsBuilder) mongodb.Index {
		return mongodb.Index{Collection: coll, Model: mongo.IndexModel{Keys: keys, Options: opts.SetName(name)}}
	}
	if err := mongodb.EnsureIndexes(ctx, db,
		idx(Clicks, "batch", bson.D{{Key: "batch", Value: 1}}, options.Index()),
		// Open batches only: the index holds the batches not yet applied, oldest first.
		idx(Batches, "open", bson.D{{Key: "stored", Value: 1}}, options.Index().SetPartialFilterExpression(isOpen)),
		idx(Batches, "expires_at", bson.D{{Key: "expires_at", Value: 1}}, options.Index().SetExpireAfterSeconds(0)),
		idx(Clicks, "link_day", bson.D{{Key: "link_id", Value: 1}, {Key: "day", Value: 1}}, options.Index()),
		// expires_at holds the deadline itself, so a new retention setting applies to the
		// clicks stored from then on without rebuilding the index.
		idx(Clicks, "expires_at", bson.D{{Key: "expires_at", Value: 1}}, options.Index().SetExpireAfterSeconds(0)),
		idx(Visitors, "expires_at", bson.D{{Key: "expires_at", Value: 1}}, options.Index().SetExpireAfterSeconds(0)),
		idx(purged, "at", bson.D{{Key: "at", Value: 1}}, options.Index()),
	); err != nil {
		return nil, err
	}
	return s, nil
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
	// Visitor names the click's link_visitors document; empty without a visitor hash.
	Visitor   string        `bson:"visitor,omitempty"`
	ExpiresAt time.Time     `bson:"expires_at"`
	Batch     bson.ObjectID `bson:"batch,omitempty"`
}

// batchDoc is a batch's record: when it was stored, and open until it is in the rollups.
type batchDoc struct {
	ID        bson.ObjectID `bson:"_id"`
	Stored    time.Time     `bson:"stored"`
	Open      bool          `bson:"open,omitempty"`
	ExpiresAt time.Time     `bson:"expires_at"`
}

// visitorDoc is one visitor of a link on a day and the click that met it first.
type visitorDoc struct {
	ID        string    `bson:"_id"` // link|day|hash
	Click     string    `bson:"click"`
	ExpiresAt time.Time `bson:"expires_at"`
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

// insertNew inserts docs, keeping the ones already stored as they are, and returns the
// indexes (in docs) of those.
func insertNew(ctx context.Context, coll *mongo.Collection, docs []any) ([]int, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	// Parts of a large batch go in at once, on connections of their own: one insert runs on
	// one server process, and the others would idle.
	parts := min(insertParallelism, (len(docs)+insertPart-1)/insertPart)
	size := (len(docs) + parts - 1) / parts
	dups := make([][]int, parts)
	var g errgroup.Group
	for p := range parts {
		from, to := p*size, min((p+1)*size, len(docs))
		g.Go(func() error {
			_, err := coll.InsertMany(ctx, docs[from:to], options.InsertMany().SetOrdered(false))
			var bwe mongo.BulkWriteException
			if errors.As(err, &bwe) && bwe.WriteConcernError == nil {
				for _, we := range bwe.WriteErrors {
					if !mongo.IsDuplicateKeyError(we) {
						return err
					}
					dups[p] = append(dups[p], from+we.Index)
				}
				return nil
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return slices.Concat(dups...), nil
}

// A batch's inserts go in parts of at least insertPart documents, at most
// insertParallelism at once.
const (
	insertPart        = 250
	insertParallelism = 4
)

// prefixRange matches the string ids starting with prefix, through the _id index.
func prefixRange(prefix string) bson.D {
	return bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: prefix}, {Key: "$lt", Value: prefix + "\uffff"}}}}
}

var (
	escaper   = strings.NewReplacer("%", "%25", ".", "%2E", "$", "%24")
	unescaper = strings.NewReplacer("%2E", ".", "%24", "$", "%25", "%")
)

// emptyKey stands for an empty value, which is no field name; an escaped "%" is "%25", so no
// other value escapes to it.
const emptyKey = "%00"

// escapeKey makes a breakdown value usable as a field name: not empty, no dots, no leading $.
// A click event's values are untrusted: one that is no field name would fail its whole batch.
func escapeKey(v string) string {
	if v == "" {
		return emptyKey
	}
	return escaper.Replace(v)
}

func unescapeKey(k string) string {
	if k == emptyKey {
		return ""
	}
	return unescaper.Replace(k)
}
