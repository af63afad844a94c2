// Package store keeps links in the link service's own MongoDB database.
package store

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

const collection = "links"

// doc is the stored shape of a link; auto_renew is 0/1 as the specification's data model says.
type doc struct {
	ID             string     `bson:"_id"`
	ShortCode      string     `bson:"short_code"`
	DestinationURL string     `bson:"destination_url"`
	OwnerID        string     `bson:"owner_id,omitempty"`
	CreatedAt      time.Time  `bson:"created_at"`
	ExpiresAt      time.Time  `bson:"expires_at"`
	DeletedAt      *time.Time `bson:"deleted_at,omitempty"`
	// DestinationChangedAt is absent until the owner first edits the destination.
	DestinationChangedAt *time.Time `bson:"destination_changed_at,omitempty"`
	Status               string     `bson:"status"`
	AutoRenew            int        `bson:"auto_renew"`
	DisabledReason       *string    `bson:"disabled_reason,omitempty"`
	Purge                *purgeDoc  `bson:"purge,omitempty"`
	// Rev counts the writes of the link; every write is conditional on it (see apply).
	Rev int64 `bson:"rev"`
	// Request fingerprints the creation request of a link created with an Idempotency-Key.
	Request string `bson:"request,omitempty"`
	// Outbox holds the events not yet on the event stream, written with their change;
	// OutboxAt is the oldest one's time, absent when there is none (a sparse index finds
	// the links with events to send).
	Outbox   []eventDoc `bson:"outbox,omitempty"`
	OutboxAt *time.Time `bson:"outbox_at,omitempty"`
	// ExpiredEventFor is the expires_at whose link.expired event was written; ExpiryDue
	// is when the next one is due, absent when none is (derived on every write, for a
	// sparse index).
	ExpiredEventFor *time.Time `bson:"expired_event_for,omitempty"`
	ExpiryDue       *time.Time `bson:"expiry_due,omitempty"`
}

// eventDoc is an event in a link's outbox.
type eventDoc struct {
	ID   string    `bson:"id"`
	Type string    `bson:"type"`
	At   time.Time `bson:"at"`
}

// purgeDoc marks a link being deleted for good, with who asked.
type purgeDoc struct {
	By        string    `bson:"by"`
	Role      string    `bson:"role"`
	IPHash    string    `bson:"ip_hash"`
	UserAgent string    `bson:"user_agent"`
	At        time.Time `bson:"at"`
}

// Store is the MongoDB link store.
type Store struct {
	links *mongo.Collection
	// codes lets one insert of a code at a time reach the store (see Insert).
	codes mongodb.Turns
}

// retries bounds the attempts of a write that lost the link's revision to another writer.
const retries = 4

// SchemaVersion is the version of the schema this store reads.
var SchemaVersion = len(migrations)

// New returns a store over db after bringing its schema up to date and making sure its
// indexes exist (nothing, under a context the boot path marked: the migration did it).
func New(ctx context.Context, db *mongo.Database) (*Store, error) {
	if err := mongodb.Migrate(ctx, db, migrations...); err != nil {
		return nil, err
	}
	err := mongodb.EnsureIndexes(ctx, db,
		mongodb.Index{Collection: collection, Model: mongo.IndexModel{
			Keys: bson.D{{Key: "short_code", Value: 1}}, Options: options.Index().SetUnique(true).SetName("short_code_unique"),
		}},
		// An owner's lists, counts and dashboard, newest first, ties broken by id.
		mongodb.Index{Collection: collection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "owner_id", Value: 1}, {Key: "created_at", Value: -1}, {Key: "_id", Value: -1}},
			Options: options.Index().SetName("owner_created"),
		}},
		// Moderators' lists of everyone's links, newest first.
		mongodb.Index{Collection: collection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "created_at", Value: -1}, {Key: "_id", Value: -1}},
			Options: options.Index().SetName("created"),
		}},
		// The admin overview's counts by state, and the auto-renewal sweep's due links.
		mongodb.Index{Collection: collection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "status", Value: 1}, {Key: "auto_renew", Value: 1}, {Key: "expires_at", Value: 1}},
			Options: options.Index().SetName("state"),
		}},
		// The purge sweeper's due links.
		mongodb.Index{Collection: collection, Model: mongo.IndexModel{
			Keys: bson.D{{Key: "purge.at", Value: 1}}, Options: options.Index().SetName("purge_at").SetSparse(true),
		}},
		// The links with events to send, and those whose expiry owes an event.
		mongodb.Index{Collection: collection, Model: mongo.IndexModel{
			Keys: bson.D{{Key: "outbox_at", Value: 1}}, Options: options.Index().SetName("outbox_at").SetSparse(true),
		}},
		mongodb.Index{Collection: collection, Model: mongo.IndexModel{
			Keys: bson.D{{Key: "expiry_due", Value: 1}}, Options: options.Index().SetName("expiry_due").SetSparse(true),
		}},
	)
	if err != nil {
		return nil, err
	}
	return &Store{links: db.Collection(collection)}, nil
}

// migrations bring a link database to the schema this code reads: every link has a revision,
// and the collections that once kept derived copies of links are gone.
var migrations = []mongodb.Step{
	{Version: 1, Name: "every link has a revision", Run: func(ctx context.Context, db *mongo.Database) error {
		_, err := db.Collection(collection).UpdateMany(ctx, bson.D{{Key: "rev", Value: bson.D{{Key: "$exists", Value: false}}}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "rev", Value: 0}}}})
		return err
	}},
	{Version: 2, Name: "no derived copies of links", Run: mongodb.DropCollections("link_changes", "link_counts", "link_packs")},
	{Version: 3, Name: "expiries owe events from now on", Run: func(ctx context.Context, db *mongo.Database) error {
		// A link that expired before events existed owes none (expired_event_for is its
		// expires_at); one that expires later owes one (expiry_due). Each update skips the
		// links it did, so a retry does only what is left.
		coll, now := db.Collection(collection), time.Now().UTC()
		owned := bson.D{{Key: "owner_id", Value: bson.D{{Key: "$exists", Value: true}, {Key: "$ne", Value: ""}}},
			{Key: "auto_renew", Value: 0}, live(), {Key: "purge", Value: bson.D{{Key: "$exists", Value: false}}},
			{Key: "expired_event_for", Value: bson.D{{Key: "$exists", Value: false}}}}
		past := append(bson.D{{Key: "expires_at", Value: bson.D{{Key: "$lte", Value: now}}}}, owned...)
		if _, err := coll.UpdateMany(ctx, past, bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "expired_event_for", Value: "$expires_at"}}}}}); err != nil {
			return err
		}
		future := append(bson.D{{Key: "expires_at", Value: bson.D{{Key: "$gt", Value: now}}},
			{Key: "expiry_due", Value: bson.D{{Key: "$exists", Value: false}}}}, owned...)
		_, err := coll.UpdateMany(ctx, future, bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "expiry_due", Value: "$expires_at"}}}}})
		return err
	}},
}

// deadlockRetries bounds the attempts of an insert the store aborted to break a deadlock;
// the caller's deadline bounds them too.
const deadlockRetries = 40

// Insert stores l; links.ErrCodeTaken when its code exists.
//
// Workaround for the embedded store (DocumentDB): concurrent inserts of one code (two owners
// choosing one custom code) deadlock on its unique index, answered as the write error
// "deadlock detected" without a MongoDB code where MongoDB answers duplicate key, and three
// or more can livelock (see mongodb.Turns). So, in two steps:
//   - within one replica, inserts of one code take turns: the first commits and the next
//     is told duplicate key at once, as on MongoDB;
//   - across replicas, where two writers can still meet, an aborted insert pauses a random,
//     growing while (the writers that deadlocked together must not meet again), looks for
//     the code, now likely the winner's, and is made again only when nobody holds it.
//
// TestConcurrentInsertsOfOneCode fails without the turns (now and then: the livelock needs
// an unlucky ring), TestConcurrentInsertsAcrossStores without the retry. On MongoDB the
// turns cost a map lookup and the retry never turns.
func (s *Store) Insert(ctx context.Context, l links.Link) error {
	l.Rev = 1
	done, err := s.codes.Take(ctx, l.ShortCode)
	if err != nil {
		return fmt.Errorf("insert link: %w", err)
	}
	defer done()
	for attempt := range deadlockRetries {
		_, err = s.links.InsertOne(ctx, toDoc(l))
		if !mongodb.IsDeadlock(err) || ctx.Err() != nil {
			break
		}
		// Longer pauses after each deadlock in a row, so a crowd of writers thins out.
		time.Sleep(time.Duration(5+mrand.IntN(20*min(attempt+1, 10))) * time.Millisecond)
		n, cerr := s.links.CountDocuments(ctx, bson.D{{Key: "short_code", Value: l.ShortCode}})
		if cerr != nil {
			return fmt.Errorf("insert link: %w", cerr)
		}
		if n > 0 {
			return links.ErrCodeTaken
		}
	}
	if mongo.IsDuplicateKeyError(err) {
		return links.ErrCodeTaken
	}
	if err != nil {
		return fmt.Errorf("insert link: %w", err)
	}
	return nil
}

// InsertMany stores links in one round trip per batch, for bulk loads; a taken code fails
// the call.
func (s *Store) InsertMany(ctx context.Context, ls []links.Link) error {
	docs := make([]any, len(ls))
	for i, l := range ls {
		l.Rev = 1
		docs[i] = toDoc(l)
	}
	if _, err := s.links.InsertMany(ctx, docs); err != nil {
		return fmt.Errorf("insert links: %w", err)
	}
	return nil
}

// InsertEach stores ls in one unordered round trip and returns each one's outcome: nil when
// stored, links.ErrCodeTaken for a duplicate key (a taken code, or an id a concurrent
// attempt stored). err is for a failure of the whole call.
func (s *Store) InsertEach(ctx context.Context, ls []links.Link) ([]error, error) {
	docs := make([]any, len(ls))
	for i, l := range ls {
		l.Rev = 1
		docs[i] = toDoc(l)
	}
	out := make([]error, len(ls))
	_, err := s.links.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	switch {
	case err == nil:
		return out, nil
	case !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0:
		return nil, fmt.Errorf("insert links: %w", err)
	}
	for _, we := range bwe.WriteErrors {
		if we.Index < 0 || we.Index >= len(ls) {
			return nil, fmt.Errorf("insert links: a write error names item %d of %d", we.Index, len(ls))
		}
		// A deadlock (see Insert) reads as a taken code here: the caller settles such an item
		// with Insert, which makes the write again and finds out.
		if mongo.IsDuplicateKeyError(we.WriteError) || mongodb.IsDeadlock(we.WriteError) {
			out[we.Index] = links.ErrCodeTaken
		} else {
			out[we.Index] = fmt.Errorf("insert link: %w", we.WriteError)
		}
	}
	return out, nil
}

// FindByCode returns the link with code, soft-deleted included; links.ErrNotFound if none.
func (s *Store) FindByCode(ctx context.Context, code string) (links.Link, error) {
	return s.findOne(ctx, bson.D{{Key: "short_code", Value: code}})
}

// FindByID returns the link with id, soft-deleted included; links.ErrNotFound if none.
func (s *Store) FindByID(ctx context.Context, id string) (links.Link, error) {
	return s.findOne(ctx, bson.D{{Key: "_id", Value: id}})
}

func (s *Store) findOne(ctx context.Context, filter bson.D) (links.Link, error) {
	var d doc
	err := s.links.FindOne(ctx, filter).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return links.Link{}, links.ErrNotFound
	}
	if err != nil {
		return links.Link{}, fmt.Errorf("find link: %w", err)
	}
	return fromDoc(d), nil
}

// Update sets the fields ch names on the link with code; links.ErrNotFound if none.
func (s *Store) Update(ctx context.Context, code string, ch links.Change) error {
	filter := bson.D{{Key: "short_code", Value: code}}
	if ch.IfID != "" {
		filter = append(filter, bson.E{Key: "_id", Value: ch.IfID})
	}
	ok, err := s.update(ctx, filter, ch)
	if err == nil && !ok {
		return links.ErrNotFound
	}
	return err
}

// UpdateLive applies ch to the live link with code owned by ownerID: a link soft-deleted or
// handed to nobody else meanwhile is not touched.
func (s *Store) UpdateLive(ctx context.Context, code, ownerID string, ch links.Change) (bool, error) {
	filter := bson.D{{Key: "short_code", Value: code}, {Key: "owner_id", Value: ownerID}, live()}
	if ch.IfStatus != "" {
		filter = append(filter, bson.E{Key: "status", Value: ch.IfStatus})
	}
	return s.update(ctx, filter, ch)
}

func (s *Store) update(ctx context.Context, filter bson.D, ch links.Change) (bool, error) {
	if ch == (links.Change{}) {
		return false, errors.New("update link: nothing to change")
	}
	_, ok, err := s.apply(ctx, filter, func(l *links.Link) { ch.Apply(l) })
	return ok, err
}

// ExtendAutoRenewing pushes the expiry of every live auto-renewing link that would expire
// within margin of now to now + extension, one conditional write each.
func (s *Store) ExtendAutoRenewing(ctx context.Context, now time.Time, margin, extension time.Duration) (int64, error) {
	filter := bson.D{{Key: "auto_renew", Value: 1}, live(), {Key: "expires_at", Value: bson.D{{Key: "$lt", Value: now.Add(margin)}}}}
	ids, err := s.ids(ctx, filter)
	if err != nil {
		return 0, fmt.Errorf("find auto-renewing links: %w", err)
	}
	var n int64
	for _, id := range ids {
		_, ok, err := s.apply(ctx, append(bson.D{{Key: "_id", Value: id}}, filter...), func(l *links.Link) {
			l.ExpiresAt = now.Add(extension).UTC().Truncate(time.Millisecond)
		})
		if err != nil {
			return n, fmt.Errorf("extend auto-renewing link: %w", err)
		}
		if ok {
			n++
		}
	}
	return n, nil
}

// ids returns the ids of the links filter matches.
func (s *Store) ids(ctx context.Context, filter bson.D) ([]string, error) {
	cur, err := s.links.Find(ctx, filter, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, err
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out, nil
}

// apply changes the link filter matches, if any, with change: it reads the link, then
// replaces it conditionally on the revision it read, so that of two concurrent writers one
// wins and the other reads again. It says links.ErrConflict after retries lost attempts, and
// returns the changed link and whether there was one to change.
func (s *Store) apply(ctx context.Context, filter bson.D, change func(*links.Link)) (links.Link, bool, error) {
	for attempt := 1; ; attempt++ {
		var d doc
		err := s.links.FindOne(ctx, filter).Decode(&d)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return links.Link{}, false, nil
		}
		if err != nil {
			return links.Link{}, false, fmt.Errorf("read link: %w", err)
		}
		after := fromDoc(d)
		change(&after)
		after.Rev = d.Rev + 1
		res, err := s.links.ReplaceOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "rev", Value: d.Rev}}, toDoc(after))
		if err != nil {
			return links.Link{}, false, fmt.Errorf("update link: %w", err)
		}
		if res.MatchedCount == 1 {
			return after, true, nil
		}
		if attempt == retries {
			return links.Link{}, false, links.ErrConflict
		}
	}
}

// live matches links that are not soft-deleted.
func live() bson.E { return bson.E{Key: "deleted_at", Value: bson.D{{Key: "$exists", Value: false}}} }

func toDoc(l links.Link) doc {
	d := doc{ID: l.ID, ShortCode: l.ShortCode, DestinationURL: l.DestinationURL, OwnerID: l.OwnerID,
		CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt, DeletedAt: l.DeletedAt, Status: l.Status, AutoRenew: autoRenew(l.AutoRenew),
		DisabledReason: l.DisabledReason, Rev: l.Rev, Request: l.Request, DestinationChangedAt: l.DestinationChangedAt}
	if m := l.Purge; m != nil {
		d.Purge = &purgeDoc{By: m.By, Role: m.Role, IPHash: m.IPHash, UserAgent: m.UserAgent, At: m.At}
	}
	for _, e := range l.Outbox {
		d.Outbox = append(d.Outbox, eventDoc(e))
		if d.OutboxAt == nil || e.At.Before(*d.OutboxAt) {
			at := e.At
			d.OutboxAt = &at
		}
	}
	d.ExpiredEventFor = l.ExpiredEventFor
	if due, ok := l.ExpiryDue(); ok {
		d.ExpiryDue = &due
	}
	return d
}

// autoRenew is the stored 0/1 of the flag.
func autoRenew(on bool) int {
	if on {
		return 1
	}
	return 0
}

func fromDoc(d doc) links.Link {
	return links.Link{ID: d.ID, ShortCode: d.ShortCode, DestinationURL: d.DestinationURL, OwnerID: d.OwnerID,
		CreatedAt: d.CreatedAt.UTC(), ExpiresAt: d.ExpiresAt.UTC(), DeletedAt: d.DeletedAt, Status: d.Status,
		AutoRenew: d.AutoRenew != 0, DisabledReason: d.DisabledReason, Purge: fromPurgeDoc(d.Purge), Rev: d.Rev, Request: d.Request,
		DestinationChangedAt: utc(d.DestinationChangedAt), ExpiredEventFor: utc(d.ExpiredEventFor), Outbox: fromEventDocs(d.Outbox)}
}

func fromPurgeDoc(p *purgeDoc) *links.PurgeMark {
	if p == nil {
		return nil
	}
	return &links.PurgeMark{By: p.By, Role: p.Role, IPHash: p.IPHash, UserAgent: p.UserAgent, At: p.At.UTC()}
}

// utc is t in UTC, or nil.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func fromEventDocs(ds []eventDoc) []links.Event {
	var out []links.Event
	for _, e := range ds {
		out = append(out, links.Event{ID: e.ID, Type: e.Type, At: e.At.UTC()})
	}
	return out
}

// OutboxDue returns up to limit links holding events, oldest first, whose oldest event was
// written after after (zero: any) and at or before before.
func (s *Store) OutboxDue(ctx context.Context, after, before time.Time, limit int64) ([]links.Link, error) {
	at := bson.D{{Key: "$lte", Value: before}}
	if !after.IsZero() {
		at = append(at, bson.E{Key: "$gt", Value: after})
	}
	return s.find(ctx, bson.D{{Key: "outbox_at", Value: at}}, bson.D{{Key: "outbox_at", Value: 1}}, limit)
}

// FindByIDs returns the links with ids (those that exist).
func (s *Store) FindByIDs(ctx context.Context, ids []string) ([]links.Link, error) {
	return s.find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}, bson.D{{Key: "_id", Value: 1}}, 0)
}

// ClearOutboxes removes events now on the stream from their links' outboxes (link id →
// event ids): one update of all the links, each keeping the events not sent (written since
// the relay read it) and dropping an emptied outbox. A write per link instead
// held the relay to about a hundred events a second on the embedded store. It does not
// count as a write of a link (its revision stays), so it never makes a conditional write of
// a concurrent change fail; such a write, read before this, may put the events back, and
// they are sent again: deliveries are keyed by event.
func (s *Store) ClearOutboxes(ctx context.Context, sent map[string][]string) error {
	if len(sent) == 0 {
		return nil
	}
	ids, events := bson.A{}, bson.A{}
	for id, evs := range sent {
		ids = append(ids, id)
		for _, e := range evs {
			events = append(events, e)
		}
	}
	keep := bson.D{{Key: "$filter", Value: bson.D{{Key: "input", Value: bson.D{{Key: "$ifNull", Value: bson.A{"$outbox", bson.A{}}}}}, {Key: "as", Value: "e"},
		{Key: "cond", Value: bson.D{{Key: "$not", Value: bson.A{bson.D{{Key: "$in", Value: bson.A{"$$e.id", events}}}}}}}}}}
	emptied := bson.D{{Key: "$eq", Value: bson.A{bson.D{{Key: "$size", Value: "$outbox"}}, 0}}}
	update := bson.A{
		bson.D{{Key: "$set", Value: bson.D{{Key: "outbox", Value: keep}}}},
		bson.D{{Key: "$set", Value: bson.D{
			{Key: "outbox", Value: bson.D{{Key: "$cond", Value: bson.A{emptied, "$$REMOVE", "$outbox"}}}},
			{Key: "outbox_at", Value: bson.D{{Key: "$cond", Value: bson.A{emptied, "$$REMOVE", "$outbox_at"}}}},
		}}},
	}
	// Only links that still hold an outbox: another relay may have cleared one already.
	filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}, {Key: "outbox", Value: bson.D{{Key: "$exists", Value: true}}}}
	if _, err := s.links.UpdateMany(ctx, filter, update); err != nil {
		return fmt.Errorf("clear link outboxes: %w", err)
	}
	return nil
}

// ExpiriesDue returns up to limit links whose expiry at or before now owes an event.
func (s *Store) ExpiriesDue(ctx context.Context, now time.Time, limit int64) ([]links.Link, error) {
	return s.find(ctx, bson.D{{Key: "expiry_due", Value: bson.D{{Key: "$lte", Value: now}}}}, bson.D{{Key: "expiry_due", Value: 1}}, limit)
}

// MarkExpired writes the link.expired event of the link with id, if its expiry at or before
// now still owes one; false when it does not (renewed, deleted, or done meanwhile).
func (s *Store) MarkExpired(ctx context.Context, id string, now time.Time) (bool, error) {
	_, ok, err := s.apply(ctx, bson.D{{Key: "_id", Value: id}, {Key: "expiry_due", Value: bson.D{{Key: "$lte", Value: now}}}},
		func(l *links.Link) {
			at := l.ExpiresAt
			l.ExpiredEventFor = &at
			l.Outbox = append(l.Outbox, links.NewEvent(link.EventExpired, now))
		})
	return ok, err
}

// find returns up to limit links filter matches, in sort order.
func (s *Store) find(ctx context.Context, filter, sort bson.D, limit int64) ([]links.Link, error) {
	docs, err := mongodb.Find[doc](ctx, s.links, "links", filter, sort, 0, limit)
	if err != nil {
		return nil, err
	}
	return fromDocs(docs), nil
}

// ExistingIDs says which of ids are stored.
func (s *Store) ExistingIDs(ctx context.Context, ids []string) (map[string]bool, error) {
	found, err := mongodb.Find[struct {
		ID string `bson:"_id"`
	}](ctx, s.links, "links", bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}, bson.D{{Key: "_id", Value: 1}}, 0, 0)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(found))
	for _, f := range found {
		out[f.ID] = true
	}
	return out, nil
}
