// Package webhooks delivers the events of a user's links to the HTTPS endpoints they
// register, as Standard Webhooks describes: the link service writes each event into the
// link's outbox with the change itself, relays it onto the link-events stream (package
// links), and this package fans each event out into one delivery per subscribed webhook
// (a stream consumer, at least once, keyed by event and webhook) and sends the deliveries,
// signed, retrying with exponential backoff for about a day.
package webhooks

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/paging"
)

// Hook is a stored webhook. Its signing secret is stored only sealed (AES-GCM under the
// service's webhook key), never as it was shown.
type Hook struct {
	ID             string
	OwnerID        string
	Slot           int
	URL            string
	Events         []string
	Active         bool
	CreatedAt      time.Time
	DisabledReason *string
	SealedSecret   []byte
	// FailingSince is the first failed attempt since the last delivered one; nil while
	// deliveries succeed.
	FailingSince *time.Time
}

// View is the public view of h.
func (h Hook) View() link.Webhook {
	return link.Webhook{ID: h.ID, URL: h.URL, Events: slices.Clone(h.Events), Active: h.Active, CreatedAt: h.CreatedAt,
		DisabledReason: h.DisabledReason}
}

// Delivery is one event's delivery to one webhook.
type Delivery struct {
	// ID is derived from the webhook and the event, so a second fan-out of one event (at
	// least once) finds it there.
	ID             string
	WebhookID      string
	OwnerID        string
	EventID        string
	Type           string
	Payload        string
	Status         string
	Attempts       int
	LastStatusCode *int
	LastError      *string
	CreatedAt      time.Time
	NextAttemptAt  time.Time
	DeliveredAt    *time.Time
}

// View is the public view of d.
func (d Delivery) View() link.Delivery {
	return link.Delivery{ID: d.ID, EventID: d.EventID, Type: d.Type, Status: d.Status, Attempts: d.Attempts,
		LastStatusCode: d.LastStatusCode, LastError: d.LastError, CreatedAt: d.CreatedAt, DeliveredAt: d.DeliveredAt}
}

// Errors stores return.
var (
	ErrNotFound  = errors.New("webhook not found")
	ErrSlotTaken = errors.New("webhook slot taken")
)

// Store keeps webhooks and deliveries; implemented by internal/store.
type Store interface {
	// InsertHook stores h; ErrSlotTaken when its owner has a webhook in h.Slot.
	InsertHook(ctx context.Context, h Hook) error
	HooksOf(ctx context.Context, ownerID string) ([]Hook, error)
	// HooksOfOwners returns the webhooks of every owner in ownerIDs.
	HooksOfOwners(ctx context.Context, ownerIDs []string) ([]Hook, error)
	// HookByID returns the webhook with id; ErrNotFound if none.
	HookByID(ctx context.Context, id string) (Hook, error)
	// DeleteHook deletes ownerID's webhook id and its deliveries; false when there is none.
	DeleteHook(ctx context.Context, ownerID, id string) (bool, error)
	// InsertDelivery stores d unless a delivery with its id exists (then nothing, no error).
	InsertDelivery(ctx context.Context, d Delivery) error
	// InsertDeliveries stores ds in one write, each unless a delivery with its id exists.
	InsertDeliveries(ctx context.Context, ds []Delivery) error
	// Deliveries returns a page of webhookID's deliveries, newest first, and their total.
	Deliveries(ctx context.Context, webhookID string, skip, limit int64) ([]Delivery, int64, error)
	// ClaimDue claims up to limit pending deliveries due at now, most overdue first, by
	// moving their next attempt to until in one write, so that no other sender takes them
	// meanwhile, and returns those it claimed (with next attempt until).
	ClaimDue(ctx context.Context, now, until time.Time, limit int64) ([]Delivery, error)
	// SaveAttempt writes the outcome of an attempt (status, attempts, last answer, next
	// attempt, delivered_at) while the delivery is still claimed until claimed; false when a
	// sender took it over meanwhile (its own outcome counts then).
	SaveAttempt(ctx context.Context, d Delivery, claimed time.Time) (bool, error)
	// SetFailing records a failed attempt at at on webhook id (the first since a success
	// sets failing_since) and returns failing_since; a success clears it (at zero).
	SetFailing(ctx context.Context, id string, at time.Time) (*time.Time, error)
	// DisableHook deactivates webhook id with reason.
	DisableHook(ctx context.Context, id, reason string) error
}

// Outbox takes events out of their links' outboxes once their deliveries are written;
// the link store satisfies it.
type Outbox interface {
	ClearOutboxes(ctx context.Context, sent map[string][]string) error
}

// Options are what a Service is built from.
type Options struct {
	Store Store
	// Outbox is told which events the fan-out made durable.
	Outbox Outbox
	Guard  *Guard
	// Key seals the webhooks' signing secrets; at least 32 characters.
	Key string
	// RetryBase scales the retry schedule (5 s by default: 5 s, 5 min, 30 min, 2 h, 5 h, 8 h,
	// 8 h, about 24 h in all).
	RetryBase time.Duration
	// DisableAfter is how long a webhook's deliveries may all fail before it is switched
	// off (3 days by default).
	DisableAfter time.Duration
	Now          func() time.Time
	Logger       *slog.Logger
}

// Service applies the webhook rules.
type Service struct {
	store        Store
	outbox       Outbox
	clearMu      sync.Mutex
	toClear      map[string][]string // link id → events whose deliveries are written
	guard        *Guard
	aead         cipher.AEAD
	retryBase    time.Duration
	disableAfter time.Duration
	now          func() time.Time
	log          *slog.Logger
	kick         chan struct{}
	senders      chan struct{}
}

// maxSenders bounds the deliveries in flight per replica.
const maxSenders = 32

// New builds a Service.
func New(o Options) (*Service, error) {
	if len(o.Key) < 32 {
		return nil, errors.New("webhooks: the webhook key must be at least 32 characters")
	}
	sum := sha256.Sum256([]byte(o.Key))
	block, err := aes.NewCipher(sum[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 5 * time.Second
	}
	if o.DisableAfter <= 0 {
		o.DisableAfter = 72 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: o.Store, outbox: o.Outbox, guard: o.Guard, aead: aead, retryBase: o.RetryBase, disableAfter: o.DisableAfter,
		now: o.Now, log: o.Logger, kick: make(chan struct{}, 1), senders: make(chan struct{}, maxSenders)}, nil
}

func (s *Service) seal(secret []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return s.aead.Seal(nonce, nonce, secret, nil)
}

func (s *Service) open(sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return nil, errors.New("sealed secret too short")
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], nil)
}

// secretPrefix starts every signing secret, as Standard Webhooks writes them.
const secretPrefix = "whsec_"

// secretBytes is the entropy of a signing secret.
const secretBytes = 24

func owner(caller identity.Caller) error {
	if caller.IsAnonymous() || caller.UserID == "" {
		return errs.E(errs.KindUnauthenticated, "authentication required")
	}
	return nil
}

const msgNotFound = "webhook not found"

// Create registers a webhook for caller: its URL passes the destination rules (https only,
// no internal address) unless every address of its host is in the allowed ranges, and its
// events are a non-empty subset of the link events. At most link.MaxWebhooks per user: each
// holds a slot of its owner, unique in the store. The secret is returned only here.
func (s *Service) Create(ctx context.Context, caller identity.Caller, req link.WebhookCreateRequest) (link.WebhookCreated, error) {
	// As links: an unverified address gets no receiver of its events.
	if caller.EmailUnverified {
		return link.WebhookCreated{}, errs.Forbidden(link.MsgVerifyEmail)
	}
	if err := owner(caller); err != nil {
		return link.WebhookCreated{}, err
	}
	if req.URL == nil {
		return link.WebhookCreated{}, errs.Invalid("url is required")
	}
	events, err := validEvents(req.Events)
	if err != nil {
		return link.WebhookCreated{}, err
	}
	if err := s.guard.CheckTarget(ctx, *req.URL); err != nil {
		return link.WebhookCreated{}, err
	}
	secret := make([]byte, secretBytes)
	if _, err := rand.Read(secret); err != nil {
		return link.WebhookCreated{}, fmt.Errorf("read webhook secret: %w", err)
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	h := Hook{ID: newID("wh_"), OwnerID: caller.UserID, URL: *req.URL, Events: events, Active: true, CreatedAt: now,
		SealedSecret: s.seal(secret)}
	for range 2 * link.MaxWebhooks {
		hooks, err := s.store.HooksOf(ctx, caller.UserID)
		if err != nil {
			return link.WebhookCreated{}, err
		}
		var free []int
		for slot := range link.MaxWebhooks {
			if !slices.ContainsFunc(hooks, func(o Hook) bool { return o.Slot == slot }) {
				free = append(free, slot)
			}
		}
		if len(free) == 0 {
			return link.WebhookCreated{}, errs.E(errs.KindConflict, "at most %d webhooks per account", link.MaxWebhooks)
		}
		h.Slot = free[mrand.IntN(len(free))]
		switch err := s.store.InsertHook(ctx, h); {
		case err == nil:
			return link.WebhookCreated{Webhook: h.View(), Secret: secretPrefix + base64.StdEncoding.EncodeToString(secret)}, nil
		case !errors.Is(err, ErrSlotTaken):
			return link.WebhookCreated{}, err
		}
	}
	return link.WebhookCreated{}, errs.E(errs.KindConflict, "too many concurrent webhook creations; try again")
}

// validEvents checks the events of a creation: a non-empty subset of the link events,
// returned de-duplicated in the API's order.
func validEvents(req *[]string) ([]string, error) {
	all := link.WebhookEvents()
	if req == nil || len(*req) == 0 {
		return nil, errs.Invalid("events must list at least one of %s", strings.Join(all, ", "))
	}
	for _, e := range *req {
		if !slices.Contains(all, e) {
			if len(e) > 64 {
				e = e[:64]
			}
			return nil, errs.Invalid("events: unknown event %q (known: %s)", e, strings.Join(all, ", "))
		}
	}
	var out []string
	for _, e := range all {
		if slices.Contains(*req, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// List returns caller's webhooks, newest first.
func (s *Service) List(ctx context.Context, caller identity.Caller) (link.WebhookList, error) {
	if err := owner(caller); err != nil {
		return link.WebhookList{}, err
	}
	hooks, err := s.store.HooksOf(ctx, caller.UserID)
	if err != nil {
		return link.WebhookList{}, err
	}
	out := link.WebhookList{Webhooks: []link.Webhook{}}
	for _, h := range hooks {
		out.Webhooks = append(out.Webhooks, h.View())
	}
	return out, nil
}

// Delete removes caller's webhook id and its delivery log; its pending deliveries go with
// it. Another user's or an unknown id is a 404.
func (s *Service) Delete(ctx context.Context, caller identity.Caller, id string) error {
	if err := owner(caller); err != nil {
		return err
	}
	ok, err := s.store.DeleteHook(ctx, caller.UserID, id)
	if err != nil {
		return err
	}
	if !ok {
		return errs.NotFound(msgNotFound)
	}
	return nil
}

// DeleteAll removes every webhook of the caller with its delivery log (their account is
// going); again, it does nothing.
func (s *Service) DeleteAll(ctx context.Context, caller identity.Caller) error {
	if err := owner(caller); err != nil {
		return err
	}
	hooks, err := s.store.HooksOf(ctx, caller.UserID)
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if _, err := s.store.DeleteHook(ctx, caller.UserID, h.ID); err != nil {
			return err
		}
	}
	return nil
}

// hookOf returns caller's webhook id, or a 404.
func (s *Service) hookOf(ctx context.Context, caller identity.Caller, id string) (Hook, error) {
	if err := owner(caller); err != nil {
		return Hook{}, err
	}
	h, err := s.store.HookByID(ctx, id)
	if errors.Is(err, ErrNotFound) || (err == nil && h.OwnerID != caller.UserID) {
		return Hook{}, errs.NotFound(msgNotFound)
	}
	return h, err
}

// Test queues a ping delivery to caller's webhook id, sent like any other (even to an
// inactive webhook: a test is how its owner checks a fixed receiver).
func (s *Service) Test(ctx context.Context, caller identity.Caller, id string) error {
	h, err := s.hookOf(ctx, caller, id)
	if err != nil {
		return err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	eventID := newID("evt_")
	body := payload(link.EventPing, now, map[string]any{"webhook_id": h.ID})
	if err := s.store.InsertDelivery(ctx, newDelivery(h, eventID, link.EventPing, body, now)); err != nil {
		return err
	}
	s.wake()
	return nil
}

// Deliveries lists a page of caller's webhook id's deliveries, newest first.
func (s *Service) Deliveries(ctx context.Context, caller identity.Caller, id string, get func(string) string) (link.DeliveryList, error) {
	page, err := paging.Parse(get)
	if err != nil {
		return link.DeliveryList{}, err
	}
	if _, err := s.hookOf(ctx, caller, id); err != nil {
		return link.DeliveryList{}, err
	}
	ds, total, err := s.store.Deliveries(ctx, id, page.Skip(), page.Limit())
	if err != nil {
		return link.DeliveryList{}, err
	}
	out := link.DeliveryList{Deliveries: make([]link.Delivery, 0, len(ds)), Page: page.Page, PageSize: page.PageSize, Total: total}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, d.View())
	}
	return out, nil
}

// newID returns prefix and 96 random bits in hex.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// deliveryID is the id of event's delivery to webhook: the same however often the event
// is fanned out.
func deliveryID(webhookID, eventID string) string {
	sum := sha256.Sum256([]byte(webhookID + "\x00" + eventID))
	return "dlv_" + hex.EncodeToString(sum[:12])
}

func newDelivery(h Hook, eventID, typ, body string, now time.Time) Delivery {
	return Delivery{ID: deliveryID(h.ID, eventID), WebhookID: h.ID, OwnerID: h.OwnerID, EventID: eventID, Type: typ,
		Payload: body, Status: link.DeliveryPending, CreatedAt: now, NextAttemptAt: now}
}
