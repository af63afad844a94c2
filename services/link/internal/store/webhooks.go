package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/services/link/internal/webhooks"
)

// Collections of the webhooks.
const (
	hooksCollection      = "webhooks"
	deliveriesCollection = "webhook_deliveries"
)

// DeliveryRetention is how long a delivery is kept in its webhook's log.
const DeliveryRetention = 30 * 24 * time.Hour

type hookDoc struct {
	ID             string     `bson:"_id"`
	OwnerID        string     `bson:"owner_id"`
	Slot           int        `bson:"slot"`
	URL            string     `bson:"url"`
	Events         []string   `bson:"events"`
	Active         bool       `bson:"active"`
	CreatedAt      time.Time  `bson:"created_at"`
	DisabledReason *string    `bson:"disabled_reason,omitempty"`
	SealedSecret   []byte     `bson:"sealed_secret"`
	FailingSince   *time.Time `bson:"failing_since,omitempty"`
}

type deliveryDoc struct {
	ID             string     `bson:"_id"`
	WebhookID      string     `bson:"webhook_id"`
	OwnerID        string     `bson:"owner_id"`
	EventID        string     `bson:"event_id"`
	Type           string     `bson:"type"`
	Payload        string     `bson:"payload"`
	Status         string     `bson:"status"`
	Attempts       int        `bson:"attempts"`
	LastStatusCode *int       `bson:"last_status_code,omitempty"`
	LastError      *string    `bson:"last_error,omitempty"`
	CreatedAt      time.Time  `bson:"created_at"`
	NextAttemptAt  time.Time  `bson:"next_attempt_at"`
	DeliveredAt    *time.Time `bson:"delivered_at,omitempty"`
	// ExpiresAt is when the log forgets the delivery (a TTL index).
	ExpiresAt time.Time `bson:"expires_at"`
}

// Webhooks is the MongoDB store of webhooks and their deliveries; it implements
// webhooks.Store.
type Webhooks struct {
	hooks, deliveries *mongo.Collection
}

// NewWebhooks returns the webhook store over db after making sure its indexes exist.
func NewWebhooks(ctx context.Context, db *mongo.Database) (*Webhooks, error) {
	err := mongodb.EnsureIndexes(ctx, db,
		// An owner's slots bound the webhooks per user under racing creations.
		mongodb.Index{Collection: hooksCollection, Model: mongo.IndexModel{
			Keys: bson.D{{Key: "owner_id", Value: 1}, {Key: "slot", Value: 1}}, Options: options.Index().SetUnique(true).SetName("owner_slot_unique"),
		}},
		mongodb.Index{Collection: deliveriesCollection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "webhook_id", Value: 1}, {Key: "created_at", Value: -1}, {Key: "_id", Value: -1}},
			Options: options.Index().SetName("webhook_created"),
		}},
		mongodb.Index{Collection: deliveriesCollection, Model: mongo.IndexModel{
			Keys:    bson.D{{Key: "status", Value: 1}, {Key: "next_attempt_at", Value: 1}},
			Options: options.Index().SetName("due"),
		}},
		mongodb.Index{Collection: deliveriesCollection, Model: mongo.IndexModel{
			Keys: bson.D{{Key: "expires_at", Value: 1}}, Options: options.Index().SetName("expires_at_ttl").SetExpireAfterSeconds(0),
		}},
	)
	if err != nil {
		return nil, err
	}
	return &Webhooks{hooks: db.Collection(hooksCollection), deliveries: db.Collection(deliveriesCollection)}, nil
}

// InsertHook stores h; webhooks.ErrSlotTaken when its owner has a webhook in its slot.
func (w *Webhooks) InsertHook(ctx context.Context, h webhooks.Hook) error {
	_, err := w.hooks.InsertOne(ctx, hookDoc(h))
	if mongo.IsDuplicateKeyError(err) {
		return webhooks.ErrSlotTaken
	}
	if err != nil {
		return fmt.Errorf("insert webhook: %w", err)
	}
	return nil
}

// HooksOf returns ownerID's webhooks, newest first.
func (w *Webhooks) HooksOf(ctx context.Context, ownerID string) ([]webhooks.Hook, error) {
	docs, err := mongodb.Find[hookDoc](ctx, w.hooks, "webhooks", bson.D{{Key: "owner_id", Value: ownerID}}, mongodb.NewestFirst(), 0, 0)
	if err != nil {
		return nil, err
	}
	out := make([]webhooks.Hook, len(docs))
	for i, d := range docs {
		out[i] = d.hook()
	}
	return out, nil
}

func (d hookDoc) hook() webhooks.Hook {
	h := webhooks.Hook(d)
	h.CreatedAt = d.CreatedAt.UTC()
	h.FailingSince = utc(d.FailingSince)
	return h
}

// HookByID returns the webhook with id; webhooks.ErrNotFound if none.
func (w *Webhooks) HookByID(ctx context.Context, id string) (webhooks.Hook, error) {
	var d hookDoc
	err := w.hooks.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return webhooks.Hook{}, webhooks.ErrNotFound
	}
	if err != nil {
		return webhooks.Hook{}, fmt.Errorf("find webhook: %w", err)
	}
	return d.hook(), nil
}

// DeleteHook deletes ownerID's webhook id, then its deliveries; false when there is none.
// A crash between the two leaves deliveries whose sender finds no webhook and ends them.
func (w *Webhooks) DeleteHook(ctx context.Context, ownerID, id string) (bool, error) {
	res, err := w.hooks.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "owner_id", Value: ownerID}})
	if err != nil {
		return false, fmt.Errorf("delete webhook: %w", err)
	}
	if res.DeletedCount == 0 {
		return false, nil
	}
	if _, err := w.deliveries.DeleteMany(ctx, bson.D{{Key: "webhook_id", Value: id}}); err != nil {
		return true, fmt.Errorf("delete webhook deliveries: %w", err)
	}
	return true, nil
}

// InsertDelivery stores d unless its id exists.
func (w *Webhooks) InsertDelivery(ctx context.Context, d webhooks.Delivery) error {
	_, err := w.deliveries.InsertOne(ctx, newDeliveryDoc(d))
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("insert webhook delivery: %w", err)
	}
	return nil
}

func newDeliveryDoc(d webhooks.Delivery) deliveryDoc {
	return deliveryDoc{ID: d.ID, WebhookID: d.WebhookID, OwnerID: d.OwnerID, EventID: d.EventID, Type: d.Type, Payload: d.Payload,
		Status: d.Status, Attempts: d.Attempts, CreatedAt: d.CreatedAt, NextAttemptAt: d.NextAttemptAt, ExpiresAt: d.CreatedAt.Add(DeliveryRetention)}
}

func (d deliveryDoc) delivery() webhooks.Delivery {
	return webhooks.Delivery{ID: d.ID, WebhookID: d.WebhookID, OwnerID: d.OwnerID, EventID: d.EventID, Type: d.Type, Payload: d.Payload,
		Status: d.Status, Attempts: d.Attempts, LastStatusCode: d.LastStatusCode, LastError: d.LastError, CreatedAt: d.CreatedAt.UTC(),
		NextAttemptAt: d.NextAttemptAt.UTC(), DeliveredAt: utc(d.DeliveredAt)}
}

// deliveries converts stored deliveries.
func deliveries(docs []deliveryDoc) []webhooks.Delivery {
	out := make([]webhooks.Delivery, len(docs))
	for i, d := range docs {
		out[i] = d.delivery()
	}
	return out
}

// Deliveries returns a page of webhookID's deliveries, newest first, and their total.
func (w *Webhooks) Deliveries(ctx context.Context, webhookID string, skip, limit int64) ([]webhooks.Delivery, int64, error) {
	docs, total, err := mongodb.FindPage[deliveryDoc](ctx, w.deliveries, "webhook deliveries", bson.D{{Key: "webhook_id", Value: webhookID}},
		mongodb.NewestFirst(), skip, limit)
	if err != nil {
		return nil, 0, err
	}
	return deliveries(docs), total, nil
}

// ClaimDue claims up to limit pending deliveries due at now, most overdue first: one read
// of their ids, one write moving their next attempt to until under a fresh claim mark, one
// read of those the mark won (another sender's concurrent claim wins the others).
func (w *Webhooks) ClaimDue(ctx context.Context, now, until time.Time, limit int64) ([]webhooks.Delivery, error) {
	due := bson.D{{Key: "status", Value: link.DeliveryPending}, {Key: "next_attempt_at", Value: bson.D{{Key: "$lte", Value: now}}}}
	ids, err := mongodb.Find[struct {
		ID string `bson:"_id"`
	}](ctx, w.deliveries, "due webhook deliveries", due, bson.D{{Key: "next_attempt_at", Value: 1}}, 0, limit)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	in := make(bson.A, len(ids))
	for i, d := range ids {
		in[i] = d.ID
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	mark := hex.EncodeToString(b[:])
	if _, err := w.deliveries.UpdateMany(ctx, append(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}}, due...),
		bson.D{{Key: "$set", Value: bson.D{{Key: "next_attempt_at", Value: until}, {Key: "claim", Value: mark}}}}); err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	docs, err := mongodb.Find[deliveryDoc](ctx, w.deliveries, "claimed webhook deliveries",
		bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: in}}}, {Key: "claim", Value: mark}}, bson.D{{Key: "next_attempt_at", Value: 1}}, 0, 0)
	if err != nil {
		return nil, err
	}
	return deliveries(docs), nil
}

// SaveAttempt writes an attempt's outcome while the delivery is still claimed until claimed.
func (w *Webhooks) SaveAttempt(ctx context.Context, d webhooks.Delivery, claimed time.Time) (bool, error) {
	set := bson.D{{Key: "status", Value: d.Status}, {Key: "attempts", Value: d.Attempts}, {Key: "next_attempt_at", Value: d.NextAttemptAt}}
	unset := bson.D{}
	for _, f := range []struct {
		key string
		val any
		nil bool
	}{{"last_status_code", d.LastStatusCode, d.LastStatusCode == nil}, {"last_error", d.LastError, d.LastError == nil},
		{"delivered_at", d.DeliveredAt, d.DeliveredAt == nil}} {
		if f.nil {
			unset = append(unset, bson.E{Key: f.key, Value: ""})
		} else {
			set = append(set, bson.E{Key: f.key, Value: f.val})
		}
	}
	update := bson.D{{Key: "$set", Value: set}}
	if len(unset) > 0 {
		update = append(update, bson.E{Key: "$unset", Value: unset})
	}
	res, err := w.deliveries.UpdateOne(ctx, bson.D{{Key: "_id", Value: d.ID}, {Key: "status", Value: link.DeliveryPending},
		{Key: "next_attempt_at", Value: claimed}}, update)
	if err != nil {
		return false, fmt.Errorf("save webhook delivery: %w", err)
	}
	return res.MatchedCount == 1, nil
}

// SetFailing records a failed attempt at at (the first since a success sets failing_since)
// and returns failing_since; a zero at (a success) clears it.
func (w *Webhooks) SetFailing(ctx context.Context, id string, at time.Time) (*time.Time, error) {
	if at.IsZero() {
		_, err := w.hooks.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "failing_since", Value: bson.D{{Key: "$exists", Value: true}}}},
			bson.D{{Key: "$unset", Value: bson.D{{Key: "failing_since", Value: ""}}}})
		if err != nil {
			return nil, fmt.Errorf("clear webhook failures: %w", err)
		}
		return nil, nil
	}
	if _, err := w.hooks.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "failing_since", Value: bson.D{{Key: "$exists", Value: false}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "failing_since", Value: at}}}}); err != nil {
		return nil, fmt.Errorf("record webhook failures: %w", err)
	}
	h, err := w.HookByID(ctx, id)
	if err != nil {
		return nil, err
	}
	return h.FailingSince, nil
}

// DisableHook deactivates webhook id with reason.
func (w *Webhooks) DisableHook(ctx context.Context, id, reason string) error {
	if _, err := w.hooks.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "active", Value: false}, {Key: "disabled_reason", Value: reason}}}}); err != nil {
		return fmt.Errorf("disable webhook: %w", err)
	}
	return nil
}

// HooksOfOwners returns the webhooks of every owner in ownerIDs.
func (w *Webhooks) HooksOfOwners(ctx context.Context, ownerIDs []string) ([]webhooks.Hook, error) {
	docs, err := mongodb.Find[hookDoc](ctx, w.hooks, "webhooks", bson.D{{Key: "owner_id", Value: bson.D{{Key: "$in", Value: ownerIDs}}}},
		bson.D{{Key: "_id", Value: 1}}, 0, 0)
	if err != nil {
		return nil, err
	}
	out := make([]webhooks.Hook, len(docs))
	for i, d := range docs {
		out[i] = d.hook()
	}
	return out, nil
}

// InsertDeliveries stores ds in one unordered write; a delivery whose id exists is left as
// it is (an event fanned out again).
func (w *Webhooks) InsertDeliveries(ctx context.Context, ds []webhooks.Delivery) error {
	docs := make([]any, len(ds))
	for i, d := range ds {
		docs[i] = newDeliveryDoc(d)
	}
	_, err := w.deliveries.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	var bwe mongo.BulkWriteException
	if err == nil || (errors.As(err, &bwe) && bwe.WriteConcernError == nil && allDuplicates(bwe)) {
		return nil
	}
	return fmt.Errorf("insert webhook deliveries: %w", err)
}

// allDuplicates reports whether every write error of e is a duplicate key.
func allDuplicates(e mongo.BulkWriteException) bool {
	for _, we := range e.WriteErrors {
		if !mongo.IsDuplicateKeyError(we.WriteError) {
			return false
		}
	}
	return len(e.WriteErrors) > 0
}
