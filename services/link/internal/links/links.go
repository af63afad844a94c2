// Package links holds the rules of short links: creation (destination checks, expiry bounds,
// code generation) and what a visitor of a code gets.
package links

import (
	"context"
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
	Status         string
	AutoRenew      bool
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
	Status    *string
	ExpiresAt *time.Time
	AutoRenew *bool
	DeletedAt *time.Time
}

// States a list can select; a link is in exactly one of the first three.
const (
	StateActive   = "active"
	StateExpired  = "expired"
	StateDisabled = "disabled"
	StateAll      = "all"
)

// ListQuery selects a page of one owner's live (not soft-deleted) links, newest first.
type ListQuery struct {
	OwnerID string
	// State is one of the State constants, as of Now.
	State string
	Now   time.Time
	// Contains, when set, is a literal substring of the code or the destination.
	Contains    string
	Skip, Limit int64
}

// ErrNotFound is returned by stores for an unknown code.
var ErrNotFound = errors.New("link not found")

// ErrCodeTaken is returned by stores when the short code already exists.
var ErrCodeTaken = errors.New("short code taken")

// Store persists links; implemented by internal/store.
type Store interface {
	Insert(ctx context.Context, l Link) error
	// FindByCode returns the link with code, soft-deleted ones included.
	FindByCode(ctx context.Context, code string) (Link, error)
	// List returns a page of q's links and how many match in all.
	List(ctx context.Context, q ListQuery) ([]Link, int64, error)
	// Update applies ch to the link with code; ErrNotFound if none.
	Update(ctx context.Context, code string, ch Change) error
	// Count counts q's links (Skip and Limit unused).
	Count(ctx context.Context, q ListQuery) (int64, error)
	// UpdateLive applies ch to the live link with code owned by ownerID; false when there is
	// none (unknown, another owner's, or soft-deleted meanwhile).
	UpdateLive(ctx context.Context, code, ownerID string, ch Change) (bool, error)
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
