// Package requests holds the moderation service's rules: the permanent-link queue (a link's
// owner asks for it to renew itself for good, a moderator approves — the link service sets
// its auto_renew — or rejects), the abuse-report queue (anyone reports a link, a moderator
// resolves, possibly disabling it, or dismisses), the audit log every admin action writes
// into, and the admin overview.
package requests

import (
	"context"
	"errors"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
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
	ID string
	// LinkID is the link the request is for; its code may name another link after a purge.
	// Empty in requests filed before link ids were kept: those act on the code.
	LinkID         string
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

// Queue names one of the two queues a moderator resolves entries of.
type Queue int

// The queues.
const (
	QueuePermanent Queue = iota
	QueueReports
)

func (q Queue) String() string {
	if q == QueueReports {
		return "report"
	}
	return "permanent request"
}

// target is how the audit log names an entry of q.
func (q Queue) target() string {
	if q == QueueReports {
		return moderation.TargetReport
	}
	return moderation.TargetPermanentRequest
}

// Report is a stored abuse report.
type Report struct {
	ID, LinkID, ShortCode, Reason, Details, Status string
	CreatedAt                                      time.Time
	ResolvedAt                                     *time.Time
	ResolvedBy, ResolutionNote                     string
	// ClaimAction is the action a resolution in progress is taking; empty when none.
	ClaimAction string
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
	// Claim holds an entry for action; it returns the action of a dead resolver's hold it
	// took over, whose side effects the new resolution must undo.
	Claim(ctx context.Context, q Queue, id, action, by string, now, staleBefore time.Time) (bool, string, error)
	// Unclaim gives up a hold for action that did nothing.
	Unclaim(ctx context.Context, q Queue, id, action string) error
	Finish(ctx context.Context, q Queue, id, action, status, by, note string, at time.Time) (bool, error)
	InsertAudit(ctx context.Context, e AuditEntry) error
	Audit(ctx context.Context, actorID, action string, skip, limit int64) ([]AuditEntry, int64, error)

	InsertReport(ctx context.Context, r Report) error
	Report(ctx context.Context, id string) (Report, error)
	Reports(ctx context.Context, status string, skip, limit int64) ([]Report, int64, error)
	DeleteReports(ctx context.Context, linkID string) error
	CountPending(ctx context.Context, q Queue) (int64, error)
	// Forget keeps of a user whose account is going only what the audit trail needs.
	Forget(ctx context.Context, userID string) error
}

// Links is what the queue asks of the link service; *link.Client satisfies it. Calls carry
// the caller's own internal token, so the link service applies its own rules to them.
type Links interface {
	Owned(ctx context.Context, code string) (link.Link, error)
	SetAutoRenew(ctx context.Context, code, linkID string, on bool) (link.Link, error)
	Resolve(ctx context.Context, code string) (link.Resolved, error)
	Disable(ctx context.Context, code string, req link.DisableRequest) (link.Link, error)
	Counts(ctx context.Context) (link.LinkCounts, error)
}

// Peers are the other services the overview and the report window ask.
type Peers struct {
	Links  Links
	Users  Users
	Clicks Clicks
	Quota  Quota
}

// Users counts accounts by status (the auth service); *auth.Client satisfies it.
type Users interface {
	UserCounts(ctx context.Context) (auth.UserCounts, error)
}

// Clicks totals every link's clicks (the analytics service); *analytics.Client satisfies it.
type Clicks interface {
	Totals(ctx context.Context) (analytics.Totals, error)
}

// Quota takes and gives back units of the report window; *quota.Client satisfies it.
type Quota interface {
	quota.Reserver
	Release(ctx context.Context, req quota.ReleaseRequest) error
}

// Service applies the queue's rules.
type Service struct {
	store  Store
	links  Links
	users  Users
	clicks Clicks
	quota  Quota
	now    func() time.Time
	newID  func() string
}

// NewService wires the rules; newID names new requests, reports and audit entries.
func NewService(store Store, peers Peers, newID func() string) *Service {
	return &Service{store: store, links: peers.Links, users: peers.Users, clicks: peers.Clicks, quota: peers.Quota,
		now: time.Now, newID: newID}
}

// view is the API shape of r.
func view(r Request) moderation.PermanentRequest {
	return moderation.PermanentRequest{ID: r.ID, ShortCode: r.ShortCode, Status: r.Status, Reason: r.Reason,
		CreatedAt: r.CreatedAt, ResolvedAt: r.ResolvedAt, ResolvedBy: r.ResolvedBy, ResolutionNote: r.ResolutionNote}
}
