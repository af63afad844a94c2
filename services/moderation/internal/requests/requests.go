// Package requests holds the rules of the permanent-link queue: a link's owner asks for it
// to renew itself for good, a moderator approves (the link service sets its auto_renew) or
// rejects, and every resolution is written to the audit log.
package requests

import (
	"context"
	"errors"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
)

// Statuses, as the client package names them.
const (
	StatusPending  = moderation.StatusPending
	StatusApproved = moderation.StatusApproved
	StatusRejected = moderation.StatusRejected
)

// MaxTextLength bounds a reason or a note, in characters.
const MaxTextLength = 2000

// claimLease is how long a resolution in progress holds a request against another action;
// past it, its resolver is presumed dead.
const claimLease = time.Minute

// Request is a stored permanent request.
type Request struct {
	ID             string
	ShortCode      string
	OwnerID        string
	Reason         string
	Status         string
	CreatedAt      time.Time
	ResolvedAt     *time.Time
	ResolvedBy     string
	ResolutionNote string
	// ClaimAction is the action a resolution in progress is taking; empty when none.
	ClaimAction string
}

// AuditEntry is one line of the admin audit trail.
type AuditEntry struct {
	ID, ActorID, Action, TargetType, TargetID string
	Detail                                    map[string]any
	IPHash, UserAgent                         string
	CreatedAt                                 time.Time
}

// Sentinel errors of the store.
var (
	ErrNotFound = errors.New("permanent request not found")
	ErrPending  = errors.New("a permanent request for this link is pending")
)

// Store keeps requests and the audit log; implemented by internal/store.
type Store interface {
	InsertRequest(ctx context.Context, r Request) error
	Request(ctx context.Context, id string) (Request, error)
	Requests(ctx context.Context, status string, skip, limit int64) ([]Request, int64, error)
	Claim(ctx context.Context, id, action, by string, now, staleBefore time.Time) (bool, error)
	Finish(ctx context.Context, id, action, status, by, note string, at time.Time) (bool, error)
	InsertAudit(ctx context.Context, e AuditEntry) error
}

// Links is what the queue asks of the link service; *link.Client satisfies it. Calls carry
// the caller's own internal token, so the link service applies its own rules to them.
type Links interface {
	Owned(ctx context.Context, code string) (link.Link, error)
	SetAutoRenew(ctx context.Context, code string, on bool) (link.Link, error)
}

// Service applies the queue's rules.
type Service struct {
	store Store
	links Links
	now   func() time.Time
	newID func() string
}

// NewService wires the rules; newID names new requests.
func NewService(store Store, links Links, newID func() string) *Service {
	return &Service{store: store, links: links, now: time.Now, newID: newID}
}

// view is the API shape of r.
func view(r Request) moderation.PermanentRequest {
	return moderation.PermanentRequest{ID: r.ID, ShortCode: r.ShortCode, Status: r.Status, Reason: r.Reason,
		CreatedAt: r.CreatedAt, ResolvedAt: r.ResolvedAt, ResolvedBy: r.ResolvedBy, ResolutionNote: r.ResolutionNote}
}
