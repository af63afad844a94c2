package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/mongodb"
)

// Collection holds the mail not yet sent.
const Collection = "mail_outbox"

// The schedule of a message: tried at once, then after growing pauses up to an hour, for
// three days; then it is kept as failed (for an operator to see) until the TTL removes it.
const (
	firstRetry = 10 * time.Second
	maxPause   = time.Hour
	giveUp     = 72 * time.Hour
	// lease is how long a relay holds a message it is sending; a relay that dies holding it
	// leaves it to another after that.
	lease = 2 * time.Minute
	// keepFailed is how long a message given up stays for an operator to see.
	keepFailed = 7 * 24 * time.Hour
)

// doc is a stored message. DueAt is when it is next tried (absent once failed); ExpiresAt,
// set once it failed, lets the TTL index remove it.
type doc struct {
	ID        string     `bson:"_id"`
	To        string     `bson:"to"`
	Subject   string     `bson:"subject"`
	Text      string     `bson:"text"`
	CreatedAt time.Time  `bson:"created_at"`
	DueAt     *time.Time `bson:"due_at,omitempty"`
	Attempts  int        `bson:"attempts"`
	LastError string     `bson:"last_error,omitempty"`
	FailedAt  *time.Time `bson:"failed_at,omitempty"`
	ExpiresAt *time.Time `bson:"expires_at,omitempty"`
}

// Outbox is the durable queue of mail.
type Outbox struct {
	coll   *mongo.Collection
	sender Sender
	log    *slog.Logger
	now    func() time.Time
	kick   chan struct{}
}

// NewOutbox makes sure the outbox's indexes exist and returns it. sender may be nil (no
// mail server configured): messages are then kept, and sent once a relay with a sender runs.
func NewOutbox(ctx context.Context, db *mongo.Database, sender Sender, log *slog.Logger) (*Outbox, error) {
	err := mongodb.EnsureIndexes(ctx, db,
		mongodb.Index{Collection: Collection, Model: mongo.IndexModel{
			Keys: bson.D{{Key: "due_at", Value: 1}}, Options: options.Index().SetName("due_at").SetSparse(true)}},
		mongodb.Index{Collection: Collection, Model: mongo.IndexModel{
			Keys: bson.D{{Key: "expires_at", Value: 1}}, Options: options.Index().SetName("expires_at_ttl").SetExpireAfterSeconds(0)}},
	)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Outbox{coll: db.Collection(Collection), sender: sender, log: log, now: time.Now, kick: make(chan struct{}, 1)}, nil
}

// Enqueue stores m under id, due at once, and wakes this replica's relay. id names the
// message for good: enqueueing it again (a retried request) stores nothing new.
func (o *Outbox) Enqueue(ctx context.Context, id string, m Message) error {
	now := o.now().UTC().Truncate(time.Millisecond)
	_, err := o.coll.InsertOne(ctx, doc{ID: id, To: m.To, Subject: cleanHeader(m.Subject), Text: m.Text, CreatedAt: now, DueAt: &now})
	if err != nil && !mongo.IsDuplicateKeyError(err) {
		return fmt.Errorf("enqueue mail: %w", err)
	}
	select {
	case o.kick <- struct{}{}:
	default:
	}
	return nil
}

// Forget drops every message to address not sent yet, and the given-up ones.
func (o *Outbox) Forget(ctx context.Context, address string) error {
	if _, err := o.coll.DeleteMany(ctx, bson.D{{Key: "to", Value: address}}); err != nil {
		return fmt.Errorf("forget mail: %w", err)
	}
	return nil
}

// Run sends due mail until ctx ends: when woken by Enqueue, and every interval for what
// is due later or was left by another replica.
func (o *Outbox) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := o.SendDue(ctx); err != nil && ctx.Err() == nil {
			o.log.WarnContext(ctx, "send due mail", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-o.kick:
		case <-t.C:
		}
	}
}

// SendDue sends every message due now, one at a time, each claimed first so that no two
// relays send it at once.
func (o *Outbox) SendDue(ctx context.Context) error {
	if o.sender == nil {
		return nil
	}
	for ctx.Err() == nil {
		d, ok, err := o.claim(ctx)
		if err != nil || !ok {
			return err
		}
		o.send(ctx, d)
	}
	return ctx.Err()
}

// claim takes the oldest due message for lease: its due_at moves past the lease, so a relay
// that dies while sending leaves it to be tried again then.
func (o *Outbox) claim(ctx context.Context) (doc, bool, error) {
	now := o.now().UTC()
	until := now.Add(lease)
	var d doc
	err := o.coll.FindOneAndUpdate(ctx,
		bson.D{{Key: "due_at", Value: bson.D{{Key: "$lte", Value: now}}}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "due_at", Value: until}}}, {Key: "$inc", Value: bson.D{{Key: "attempts", Value: 1}}}},
		options.FindOneAndUpdate().SetSort(bson.D{{Key: "due_at", Value: 1}}).SetReturnDocument(options.After)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return doc{}, false, nil
	}
	if err != nil {
		return doc{}, false, fmt.Errorf("claim mail: %w", err)
	}
	return d, true, nil
}

// send delivers d and records the outcome: removed when sent; otherwise due again after a
// pause that grows with each attempt, or failed for good after giveUp (or at once for a
// permanent failure).
func (o *Outbox) send(ctx context.Context, d doc) {
	err := o.sender.Send(ctx, Message{To: d.To, Subject: d.Subject, Text: d.Text})
	rec := context.WithoutCancel(ctx)
	if err == nil {
		if _, derr := o.coll.DeleteOne(rec, bson.D{{Key: "_id", Value: d.ID}}); derr != nil {
			o.log.WarnContext(ctx, "mail sent but not marked sent; it may go again", "mail_id", d.ID, "err", derr)
		}
		return
	}
	now := o.now().UTC()
	if IsPermanent(err) || now.Sub(d.CreatedAt) >= giveUp {
		o.log.ErrorContext(ctx, "mail given up", "mail_id", d.ID, "attempts", d.Attempts, "err", err)
		expires := now.Add(keepFailed)
		_, uerr := o.coll.UpdateOne(rec, bson.D{{Key: "_id", Value: d.ID}}, bson.D{
			{Key: "$set", Value: bson.D{{Key: "failed_at", Value: now}, {Key: "expires_at", Value: expires}, {Key: "last_error", Value: err.Error()}}},
			{Key: "$unset", Value: bson.D{{Key: "due_at", Value: ""}}}})
		if uerr != nil {
			o.log.WarnContext(ctx, "record a failed mail", "mail_id", d.ID, "err", uerr)
		}
		return
	}
	next := now.Add(Pause(d.Attempts))
	o.log.WarnContext(ctx, "mail not sent; will try again", "mail_id", d.ID, "attempts", d.Attempts, "next", next, "err", err)
	if _, uerr := o.coll.UpdateOne(rec, bson.D{{Key: "_id", Value: d.ID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "due_at", Value: next}, {Key: "last_error", Value: err.Error()}}}}); uerr != nil {
		o.log.WarnContext(ctx, "reschedule a mail", "mail_id", d.ID, "err", uerr)
	}
}

// Pause is the wait after attempt n (1-based) failed: 10 s, doubling, at most an hour.
func Pause(n int) time.Duration {
	p := firstRetry
	for i := 1; i < n && p < maxPause; i++ {
		p *= 2
	}
	return min(p, maxPause)
}
