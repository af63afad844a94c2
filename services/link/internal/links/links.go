// Package links holds the rules of short links: creation (destination checks, expiry bounds,
// code generation) and what a visitor of a code gets.
package links

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
)

// Link is a stored short link.
type Link struct {
	ID             string
	ShortCode      string
	DestinationURL string
	OwnerID        string
	CreatedAt      time.Time
	ExpiresAt      time.Time
	DeletedAt      *time.Time
	// DestinationChangedAt is when the owner last changed the destination; nil until then.
	DestinationChangedAt *time.Time
	Status               string
	AutoRenew            bool
	// DisabledReason is what a moderator said when disabling the link; nil when none.
	DisabledReason *string
	// Purge marks a link being deleted for good: it answers 404 everywhere, and the steps
	// of the deletion run (again) until the document is gone.
	Purge *PurgeMark
	// Rev is the stored revision the link was read at (or written as).
	Rev int64
	// Request is the fingerprint of the creation request when it came with an
	// Idempotency-Key (whose hash is then the link's ID); empty otherwise.
	Request string
	// Outbox holds the link's events not yet on the event stream: each is written with the
	// change it tells of, in the same write, so a crash between the two loses nothing.
	Outbox []Event
	// ExpiredEventFor is the expires_at whose link.expired event was written; a renewal
	// moves expires_at on, and the next expiry gets its own event.
	ExpiredEventFor *time.Time
}

// Event is a change of a link its owner's webhooks hear of.
type Event struct {
	// ID is unique per event: the webhook-id of every delivery of it.
	ID   string
	Type string
	At   time.Time
}

// NewEvent returns a fresh event of type typ at at.
func NewEvent(typ string, at time.Time) Event {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return Event{ID: "evt_" + hex.EncodeToString(b[:]), Type: typ, At: at.UTC().Truncate(time.Millisecond)}
}

// ExpiryDue reports whether l's expiry still owes its owner a link.expired event, and when:
// an owned, live link that does not renew itself, whose current expires_at has had none.
func (l Link) ExpiryDue() (time.Time, bool) {
	if l.OwnerID == "" || l.AutoRenew || l.DeletedAt != nil || l.Purge != nil {
		return time.Time{}, false
	}
	if l.ExpiredEventFor != nil && l.ExpiredEventFor.Equal(l.ExpiresAt) {
		return time.Time{}, false
	}
	return l.ExpiresAt, true
}

// PurgeMark is who asked for a permanent deletion, kept so that whoever finishes it (a
// retry or the sweeper) acts, and audits, in their name.
type PurgeMark struct {
	By        string
	Role      string
	IPHash    string
	UserAgent string
	At        time.Time
}

// Expired reports whether visitors of l get 410 at now: auto-renewing links never expire.
func (l Link) Expired(now time.Time) bool { return l.Resolved().Expired(now) }

// Resolved is the redirect view of l.
func (l Link) Resolved() link.Resolved {
	return link.Resolved{ID: l.ID, OwnerID: l.OwnerID, ShortCode: l.ShortCode, DestinationURL: l.DestinationURL,
		Status: l.Status, ExpiresAt: l.ExpiresAt, AutoRenew: l.AutoRenew}
}

// Change names the fields of a stored link to set; nil fields stay as they are.
type Change struct {
	// DestinationURL is set by an owner's edit, with DestinationChangedAt.
	DestinationURL       *string
	DestinationChangedAt *time.Time
	Status               *string
	ExpiresAt            *time.Time
	AutoRenew            *bool
	DeletedAt            *time.Time
	// DisabledReason is set with a disable; ClearDisabledReason removes it (an enable).
	DisabledReason      *string
	ClearDisabledReason bool
	// Event, when set, is written to the link's outbox with the change.
	Event *Event
	// IfStatus, when set, makes an owner's change conditional on the link's status still
	// being it (a moderator may disable the link between the owner's read and write).
	IfStatus string
	// IfID, when set, makes a change by code conditional on the code still naming the link
	// with this id.
	IfID string
}

// Apply makes the change to l.
func (ch Change) Apply(l *Link) {
	if ch.DestinationURL != nil {
		l.DestinationURL = *ch.DestinationURL
	}
	if ch.DestinationChangedAt != nil {
		at := ch.DestinationChangedAt.UTC()
		l.DestinationChangedAt = &at
	}
	if ch.Status != nil {
		l.Status = *ch.Status
	}
	if ch.ExpiresAt != nil {
		l.ExpiresAt = ch.ExpiresAt.UTC()
	}
	if ch.AutoRenew != nil {
		l.AutoRenew = *ch.AutoRenew
	}
	if ch.DeletedAt != nil {
		at := ch.DeletedAt.UTC()
		l.DeletedAt = &at
	}
	if ch.DisabledReason != nil {
		l.DisabledReason = ch.DisabledReason
	}
	if ch.ClearDisabledReason {
		l.DisabledReason = nil
	}
	if ch.Event != nil {
		l.Outbox = append(l.Outbox, *ch.Event)
	}
}

// States a list can select; a link is in exactly one of the first three.
const (
	StateActive   = "active"
	StateExpired  = "expired"
	StateDisabled = "disabled"
	StateAll      = "all"
)

// State is the state lists select l in at now: StateDisabled, StateExpired or StateActive
// ("" for a status that is neither active nor disabled).
func (l Link) State(now time.Time) string {
	switch {
	case l.Status == link.StatusDisabled:
		return StateDisabled
	case l.Status != link.StatusActive:
		return ""
	case l.Expired(now):
		return StateExpired
	}
	return StateActive
}

// ListQuery selects a page of links, newest first: one owner's live (not soft-deleted)
// links, or, for moderators, anyone's.
type ListQuery struct {
	// OwnerID limits the list to one owner, unless AnyOwner (moderators) lists everyone's.
	OwnerID  string
	AnyOwner bool
	// IncludeDeleted lists soft-deleted links too (moderators); links being purged never.
	IncludeDeleted bool
	// State is one of the State constants, as of Now.
	State string
	Now   time.Time
	// Contains, when set, is a literal substring of the code or the destination.
	Contains    string
	Skip, Limit int64
}

// Overview is an owner's live links counted: all of them, the expired and the disabled ones
// (every other one is active), and the newest few.
type Overview struct {
	Total, Expired, Disabled int64
	Newest                   []Link
}

// ErrNotFound is returned by stores for an unknown code.
var ErrNotFound = errors.New("link not found")

// ErrCodeTaken is returned by stores when the short code already exists.
var ErrCodeTaken = errors.New("short code taken")

// Store persists links; implemented by internal/store.
type Store interface {
	Insert(ctx context.Context, l Link) error
	// InsertEach stores ls in one round trip and returns each one's outcome (nil, or
	// ErrCodeTaken for a taken code or id).
	InsertEach(ctx context.Context, ls []Link) ([]error, error)
	// ExistingIDs says which of ids are stored.
	ExistingIDs(ctx context.Context, ids []string) (map[string]bool, error)
	// FindByCode returns the link with code, soft-deleted ones included.
	FindByCode(ctx context.Context, code string) (Link, error)
	// FindByID returns the link with id, soft-deleted ones included; ErrNotFound if none.
	FindByID(ctx context.Context, id string) (Link, error)
	// List returns a page of q's links and how many match in all.
	List(ctx context.Context, q ListQuery) ([]Link, int64, error)
	// Update applies ch to the link with code; ErrNotFound if none.
	Update(ctx context.Context, code string, ch Change) error
	// Overview counts q's owner's live links (q.State unused) and returns the n newest.
	Overview(ctx context.Context, q ListQuery, n int64) (Overview, error)
	// UpdateLive applies ch to the live link with code owned by ownerID; false when there is
	// none (unknown, another owner's, or soft-deleted meanwhile).
	UpdateLive(ctx context.Context, code, ownerID string, ch Change) (bool, error)
	// UpdateIf applies ch to the live link with code while its status is from and returns
	// the link written; false when there is none in that status.
	UpdateIf(ctx context.Context, code, from string, ch Change) (Link, bool, error)
	// Undo applies ch to the link with id only while it is still at revision rev: the
	// undo of a write that nothing has changed since.
	Undo(ctx context.Context, id string, rev int64, ch Change) (bool, error)
	// DisableOwner disables every live enabled link of ownerID, each with a link.disabled
	// event at at, and returns them.
	DisableOwner(ctx context.Context, ownerID string, reason *string, at time.Time) ([]Link, error)
	// MarkPurge marks the link with id for permanent deletion, with a link.purged event,
	// unless it is marked already; it returns the mark that holds.
	MarkPurge(ctx context.Context, id string, m PurgeMark) (PurgeMark, error)
	// PurgesDue returns up to limit links marked for deletion before before.
	PurgesDue(ctx context.Context, before time.Time, limit int64) ([]Link, error)
	// DeleteByID removes the link with id for good; deleting it again does nothing.
	DeleteByID(ctx context.Context, id string) error
	// CountStates counts every stored link not being purged by state as of now.
	CountStates(ctx context.Context, now time.Time) (link.LinkCounts, error)
	// OutboxDue returns up to limit links holding events, oldest first, whose oldest event
	// was written after after (zero: any) and at or before before.
	OutboxDue(ctx context.Context, after, before time.Time, limit int64) ([]Link, error)
	// FindByIDs returns the links with ids (those that exist).
	FindByIDs(ctx context.Context, ids []string) ([]Link, error)
	// ClearOutboxes removes events made durable elsewhere from their links' outboxes (link
	// id → event ids), in one write.
	ClearOutboxes(ctx context.Context, sent map[string][]string) error
	// ExpiriesDue returns up to limit links whose expiry at or before now owes an event.
	ExpiriesDue(ctx context.Context, now time.Time, limit int64) ([]Link, error)
	// MarkExpired writes the link.expired event of the link with id if still owed at now.
	MarkExpired(ctx context.Context, id string, now time.Time) (bool, error)
}

// Cache keeps resolved links (and the absence of a link) for at most link.CacheTTL, and tells
// every other cache when a code changes.
type Cache interface {
	// Get returns the cached view and the code's version, which Put needs: a view read from
	// the store before an invalidation must not be cached after it.
	Get(ctx context.Context, code string) (r link.Resolved, found, cached bool, version string)
	Put(ctx context.Context, code, version string, r link.Resolved, found bool)
	// Invalidate drops code everywhere; a failure is the cache's to log, since every copy
	// expires within link.CacheTTL anyway.
	Invalidate(ctx context.Context, code string)
	// Created drops what any layer may have cached about a code that did not exist until now.
	Created(ctx context.Context, code string)
}

// URLChecker validates destinations; implemented by internal/urlcheck.
type URLChecker interface {
	Check(ctx context.Context, raw string) error
}
