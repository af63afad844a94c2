// Package moderation is the typed client of the moderation service: the permanent-link
// request queue (and, as they arrive, reports and the audit log).
package moderation

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/linkmesh/linkmesh/pkg/httpclient"
)

// Statuses of a permanent request.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusRejected = "rejected"
)

// Actions a moderator resolves a permanent request with.
const (
	ActionApprove = "approve"
	ActionReject  = "reject"
)

// PermanentRequest is a user's request that a link renew itself for good.
type PermanentRequest struct {
	ID             string     `json:"id"`
	ShortCode      string     `json:"short_code"`
	Status         string     `json:"status"`
	Reason         string     `json:"reason"`
	CreatedAt      time.Time  `json:"created_at"`
	ResolvedAt     *time.Time `json:"resolved_at,omitempty"`
	ResolvedBy     string     `json:"resolved_by,omitempty"`
	ResolutionNote string     `json:"resolution_note,omitempty"`
}

// PermanentRequestBody is the body of POST /api/user/links/{code}/request-permanent.
type PermanentRequestBody struct {
	Reason *string `json:"reason"`
}

// RequestResponse wraps one request.
type RequestResponse struct {
	Request PermanentRequest `json:"request"`
}

// RequestList is a page of requests, newest first.
type RequestList struct {
	Requests []PermanentRequest `json:"requests"`
	Page     int                `json:"page"`
	PageSize int                `json:"page_size"`
	Total    int64              `json:"total"`
}

// ListParams are the query parameters of the moderators' list.
func ListParams() []string { return []string{"status", "page", "page_size"} }

// ResolveRequest is the body of a resolution.
type ResolveRequest struct {
	Action string  `json:"action"`
	Note   *string `json:"note"`
}

// Client calls the moderation service.
type Client struct{ hc *httpclient.Client }

// New wraps an HTTP client pointed at the moderation service.
func New(hc *httpclient.Client) *Client { return &Client{hc: hc} }

// RequestPermanent files the caller's request for their link code.
func (c *Client) RequestPermanent(ctx context.Context, code string, body PermanentRequestBody) (PermanentRequest, error) {
	var out RequestResponse
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/moderation/links/" + url.PathEscape(code) + "/permanent-requests", Body: body}, &out)
	return out.Request, err
}

// PermanentRequests lists requests for a moderator; query holds ListParams.
func (c *Client) PermanentRequests(ctx context.Context, query url.Values) (RequestList, error) {
	var out RequestList
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/moderation/permanent-requests?" + query.Encode()}, &out)
	return out, err
}

// ResolvePermanent approves or rejects request id. Resolving again with the same action
// finishes what a failed attempt left, so it may be retried.
func (c *Client) ResolvePermanent(ctx context.Context, id string, req ResolveRequest) (PermanentRequest, error) {
	var out RequestResponse
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/moderation/permanent-requests/" + url.PathEscape(id) + "/resolve", Body: req}, &out)
	return out.Request, err
}

// Audit actions: every state-changing admin action writes one entry with one of these.
const (
	AuditUserTimeout   = "user.timeout"
	AuditUserBan       = "user.ban"
	AuditUserUnban     = "user.unban"
	AuditUserRole      = "user.role"
	AuditLinkDisable   = "link.disable"
	AuditLinkEnable    = "link.enable"
	AuditLinkDelete    = "link.delete"
	AuditReportResolve = "report.resolve"
	AuditReportDismiss = "report.dismiss"
	// The permanent-request queue's resolutions are "permanent_request." + the action.
)

// Audit target types.
const (
	TargetUser             = "user"
	TargetLink             = "link"
	TargetReport           = "report"
	TargetPermanentRequest = "permanent_request"
)

// AuditRecord is what a service records for an action its caller took. The actor, the
// actor's IP hash and User-Agent are taken from the caller's identity token by the
// moderation service, never from the record. ID makes the write idempotent: recording the
// same ID again writes nothing, so a retried step may repeat it.
type AuditRecord struct {
	ID         string         `json:"id"`
	Action     string         `json:"action"`
	TargetType string         `json:"target_type"`
	TargetID   string         `json:"target_id"`
	Detail     map[string]any `json:"detail"`
	// Actor is who took the action. It is honoured only from a service acting as itself, which
	// finishes a step after the actor's own request ended; from a caller, the actor is the
	// caller its token names.
	Actor *AuditActor `json:"actor,omitempty"`
}

// AuditActor is who took an audited action.
type AuditActor struct {
	ID        string `json:"id"`
	IPHash    string `json:"ip_hash,omitempty"`
	UserAgent string `json:"user_agent,omitempty"`
}

// AuditEntry is one line of the audit log.
type AuditEntry struct {
	ID         string         `json:"id"`
	ActorID    string         `json:"actor_id"`
	Action     string         `json:"action"`
	TargetType string         `json:"target_type"`
	TargetID   string         `json:"target_id"`
	Detail     map[string]any `json:"detail"`
	IPHash     string         `json:"ip_hash"`
	UserAgent  string         `json:"user_agent"`
	CreatedAt  time.Time      `json:"created_at"`
}

// AuditLog is a page of the audit log, newest first.
type AuditLog struct {
	Entries  []AuditEntry `json:"entries"`
	Page     int          `json:"page"`
	PageSize int          `json:"page_size"`
	Total    int64        `json:"total"`
}

// AuditParams are the query parameters of the audit log.
func AuditParams() []string { return []string{"actor_id", "action", "page", "page_size"} }

// Audit records the caller's action: the one way any service writes the audit log. An
// error means the entry may not exist, and the action must not stand.
func (c *Client) Audit(ctx context.Context, rec AuditRecord) error {
	// A record's id makes the write idempotent, so a transient failure may be retried.
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/moderation/audit", Body: rec, Idempotent: true}, nil)
}

// Forget keeps of the caller, whose account is going, only what the audit trail needs.
func (c *Client) Forget(ctx context.Context) error {
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodDelete, Path: "/internal/moderation/users/me", Idempotent: true}, nil)
}

// AuditLog lists the audit log for a super admin; query holds AuditParams.
func (c *Client) AuditLog(ctx context.Context, query url.Values) (AuditLog, error) {
	var out AuditLog
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/moderation/audit?" + query.Encode()}, &out)
	return out, err
}

// DeleteReports deletes every report of a link, for its permanent deletion; again, it does
// nothing.
func (c *Client) DeleteReports(ctx context.Context, linkID string) error {
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodDelete, Path: "/internal/moderation/links/" + url.PathEscape(linkID) + "/reports", Idempotent: true}, nil)
}

// Report statuses, besides StatusPending, and the actions that lead to them.
const (
	StatusResolved  = "resolved"
	StatusDismissed = "dismissed"
	ActionResolve   = "resolve"
	ActionDismiss   = "dismiss"
)

// ReportReasons are the reasons a report may give.
func ReportReasons() []string { return []string{"spam", "phishing", "malware", "illegal", "other"} }

// MaxDetailsLength bounds a report's details, in characters.
const MaxDetailsLength = 2000

// ReportBody is what a reporter says (POST /api/reports without its captcha token, which
// the gateway checks). Pointers tell a missing field from an empty one.
type ReportBody struct {
	ShortCode *string `json:"short_code"`
	Reason    *string `json:"reason"`
	Details   *string `json:"details"`
}

// Report is an abuse report as moderators see it; the resolution fields are null while it
// is pending.
type Report struct {
	ID             string     `json:"id"`
	ShortCode      string     `json:"short_code"`
	Reason         string     `json:"reason"`
	Details        string     `json:"details"`
	Status         string     `json:"status"`
	CreatedAt      time.Time  `json:"created_at"`
	ResolvedAt     *time.Time `json:"resolved_at"`
	ResolvedBy     *string    `json:"resolved_by"`
	ResolutionNote *string    `json:"resolution_note"`
}

// ReportResponse wraps one report.
type ReportResponse struct {
	Report Report `json:"report"`
}

// ReportList is a page of reports, newest first.
type ReportList struct {
	Reports  []Report `json:"reports"`
	Page     int      `json:"page"`
	PageSize int      `json:"page_size"`
	Total    int64    `json:"total"`
}

// ReportResolveRequest is the body of a report's resolution; DisableLink applies to resolve.
type ReportResolveRequest struct {
	Action      string  `json:"action"`
	Note        *string `json:"note"`
	DisableLink *bool   `json:"disable_link"`
}

// Overview is the admin overview (GET /api/admin/overview).
type Overview struct {
	Users struct {
		Total     int64 `json:"total"`
		Active    int64 `json:"active"`
		Suspended int64 `json:"suspended"`
		Banned    int64 `json:"banned"`
	} `json:"users"`
	Links struct {
		Total    int64 `json:"total"`
		Active   int64 `json:"active"`
		Expired  int64 `json:"expired"`
		Disabled int64 `json:"disabled"`
		Deleted  int64 `json:"deleted"`
	} `json:"links"`
	Clicks struct {
		Total   int64 `json:"total"`
		Last24h int64 `json:"last_24h"`
	} `json:"clicks"`
	Reports struct {
		Pending int64 `json:"pending"`
	} `json:"reports"`
	PermanentRequests struct {
		Pending int64 `json:"pending"`
	} `json:"permanent_requests"`
}

// SubmitReport files an abuse report from the caller (anyone).
func (c *Client) SubmitReport(ctx context.Context, body ReportBody) error {
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/moderation/reports", Body: body}, nil)
}

// Reports lists reports for a moderator; query holds ListParams.
func (c *Client) Reports(ctx context.Context, query url.Values) (ReportList, error) {
	var out ReportList
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/moderation/reports?" + query.Encode()}, &out)
	return out, err
}

// ResolveReport resolves or dismisses report id. Resolving again with the same action
// finishes what a failed attempt left, so it may be retried.
func (c *Client) ResolveReport(ctx context.Context, id string, req ReportResolveRequest) (Report, error) {
	var out ReportResponse
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/moderation/reports/" + url.PathEscape(id) + "/resolve", Body: req}, &out)
	return out.Report, err
}

// Overview counts users, links, clicks and pending work for a moderator.
func (c *Client) Overview(ctx context.Context) (Overview, error) {
	var out Overview
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/moderation/overview", Idempotent: true}, &out)
	return out, err
}
