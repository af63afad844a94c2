// Package link is the typed client of the link service; its request and response types are
// used by the link service's handlers and by its callers alike.
package link

import (
	"github.com/linkmesh/linkmesh/pkg/clients/analytics"

	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/linkmesh/linkmesh/pkg/httpclient"
	"github.com/linkmesh/linkmesh/pkg/ratelimit"
)

// InvalidationChannel is the Redis pub/sub channel on which the short code of every changed
// link is published, so that every cache of it is dropped.
const InvalidationChannel = "linkmesh:links:invalidate"

// CacheTTL bounds how long any layer may keep a copy of a link, so a lost invalidation heals.
const CacheTTL = 30 * time.Second

// CreateBudget bounds a whole creation in the link service (destination lookup, quota,
// insert); a caller waits a little longer, so it always hears how the creation ended.
const CreateBudget = 9 * time.Second

// Answers given wherever the condition is met.
const (
	// MsgNotFound is the answer for an unknown or deleted code, or another owner's link.
	MsgNotFound = "short link not found"
	// MsgDisabled is the answer for a link moderation disabled.
	MsgDisabled = "short link has been disabled"
)

// Link statuses as stored.
const (
	StatusActive   = "ACTIVE"
	StatusDisabled = "DISABLED"
)

// ShortenRequest is the public body of POST /api/links/shorten.
type ShortenRequest struct {
	URL            string  `json:"url"`
	ExpirationDays *int    `json:"expiration_days"`
	CustomCode     *string `json:"custom_code"`
	CaptchaToken   *string `json:"captcha_token"`
}

// CreateRequest is the body of the link service's create call.
type CreateRequest struct {
	URL            string  `json:"url"`
	ExpirationDays *int    `json:"expiration_days,omitempty"`
	CustomCode     *string `json:"custom_code,omitempty"`
	// IdempotencyKey is the client's Idempotency-Key header: the same key with the same
	// request answers with the link the first one created, a different request 422.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// Created is the 201 body of a creation, public and internal.
type Created struct {
	ShortCode      string    `json:"short_code"`
	ShortURL       string    `json:"short_url"`
	DestinationURL string    `json:"destination_url"`
	ExpiresAt      time.Time `json:"expires_at"`
	CreatedAt      time.Time `json:"created_at"`
}

// MaxBulk is the most links one bulk creation may hold.
const MaxBulk = 100

// BulkItem is one link of a bulk creation: the fields of a shorten request.
type BulkItem struct {
	URL            string  `json:"url"`
	ExpirationDays *int    `json:"expiration_days,omitempty"`
	CustomCode     *string `json:"custom_code,omitempty"`
}

// BulkRequest is the body of POST /api/links/bulk (Links: 1–MaxBulk items).
type BulkRequest struct {
	Links *[]BulkItem `json:"links"`
	// IdempotencyKey is the client's Idempotency-Key header, set by the gateway: it covers
	// the whole request.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// BulkResult is the outcome of one item, in request order: 201 with the link, or the status
// and message one shorten would have answered.
type BulkResult struct {
	Index  int    `json:"index"`
	Status int    `json:"status"`
	Link   *Link  `json:"link,omitempty"`
	Error  string `json:"error,omitempty"`
}

// BulkResponse is {"results": [...]}; Quota is the caller's creation window after the
// request, for the gateway's RateLimit fields (never shown in the body).
type BulkResponse struct {
	Results []BulkResult      `json:"results"`
	Quota   *ratelimit.Window `json:"quota,omitempty"`
}

// CreateResult is the link service's answer to a creation: the public Created fields, and
// the caller's creation window after it, which the gateway turns into RateLimit fields.
type CreateResult struct {
	Created
	Quota *ratelimit.Window `json:"quota,omitempty"`
}

// Resolved is what the redirect path needs to answer for a code.
type Resolved struct {
	// ID and OwnerID name the link and its owner (empty for an anonymous link) on the
	// clicks the gateway records; visitors never see them.
	ID             string    `json:"id"`
	OwnerID        string    `json:"owner_id,omitempty"`
	ShortCode      string    `json:"short_code"`
	DestinationURL string    `json:"destination_url"`
	Status         string    `json:"status"`
	ExpiresAt      time.Time `json:"expires_at"`
	AutoRenew      bool      `json:"auto_renew"`
}

// Expired reports whether visitors get 410 at now. It is the one expiry rule: the link
// service applies it to stored links and the gateway to its cached copies, because an entry
// cached before its expiry must expire in the cache too. Auto-renewing links never expire.
func (r Resolved) Expired(now time.Time) bool {
	return !r.AutoRenew && !now.Before(r.ExpiresAt)
}

// Info is the public information of a link (GET /api/links/{code}/info).
type Info struct {
	ShortCode string `json:"short_code"`
	ShortURL  string `json:"short_url"`
	// DestinationURL is absent for a disabled link: what moderation took down is not
	// served here either.
	DestinationURL string    `json:"destination_url,omitempty"`
	Status         string    `json:"status"`
	Expired        bool      `json:"expired"`
	AutoRenew      bool      `json:"auto_renew"`
	CreatedAt      time.Time `json:"created_at"`
	ExpiresAt      time.Time `json:"expires_at"`
}

// Link is the owner's (and, with OwnerID, the admin's) view of a link.
type Link struct {
	ID             string     `json:"id"`
	ShortCode      string     `json:"short_code"`
	ShortURL       string     `json:"short_url"`
	DestinationURL string     `json:"destination_url"`
	OwnerID        string     `json:"owner_id,omitempty"`
	Status         string     `json:"status"`
	Expired        bool       `json:"expired"`
	AutoRenew      bool       `json:"auto_renew"`
	ClickCount     int64      `json:"click_count"`
	CreatedAt      time.Time  `json:"created_at"`
	ExpiresAt      time.Time  `json:"expires_at"`
	DeletedAt      *time.Time `json:"deleted_at"`
	// DestinationChangedAt is when the owner last edited the destination; absent until then.
	DestinationChangedAt *time.Time `json:"destination_changed_at,omitempty"`
}

// LinkResponse wraps one link.
type LinkResponse struct {
	Link Link `json:"link"`
}

// List is a page of links, newest first.
type List struct {
	Links    []Link `json:"links"`
	Page     int    `json:"page"`
	PageSize int    `json:"page_size"`
	Total    int64  `json:"total"`
}

// ListParams are the query parameters of the owner's list: paging, status and q.
func ListParams() []string { return []string{"page", "page_size", "status", "q"} }

// Dashboard is a signed-in user's summary (GET /api/user/dashboard).
type Dashboard struct {
	TotalLinks    int64          `json:"total_links"`
	ActiveLinks   int64          `json:"active_links"`
	ExpiredLinks  int64          `json:"expired_links"`
	DisabledLinks int64          `json:"disabled_links"`
	TotalClicks   int64          `json:"total_clicks"`
	Quota         DashboardQuota `json:"quota"`
	RecentLinks   []Link         `json:"recent_links"`
}

// DashboardQuota is the account's creation quota as of now; ResetsAt, when the next unit
// frees, is null when nothing is used.
type DashboardQuota struct {
	Limit      int        `json:"limit"`
	Used       int        `json:"used"`
	Remaining  int        `json:"remaining"`
	WindowDays int        `json:"window_days"`
	ResetsAt   *time.Time `json:"resets_at"`
}

// AutoRenewRequest switches a link's auto-renewal (moderators, on approving a permanent
// request).
type AutoRenewRequest struct {
	AutoRenew bool `json:"auto_renew"`
	// LinkID, when set, names the link the change is for: if code now names another link
	// (the one asked about was purged and its code reused) or none, the answer is 409
	// MsgLinkGone and nothing changes.
	LinkID string `json:"link_id,omitempty"`
}

// Export is the links part of an account's data export: every live link of the owner with
// its analytics.
type Export struct {
	Links []ExportedLink `json:"links"`
}

// ExportedLink is one link of an export: the owner's view and its analytics over the longest
// range kept.
type ExportedLink struct {
	Link      Link                    `json:"link"`
	Analytics analytics.LinkAnalytics `json:"analytics"`
}

// Export returns every live link of the caller with its analytics.
func (c *Client) Export(ctx context.Context) (Export, error) {
	var out Export
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/links/export"}, &out)
	return out, err
}

// DeleteAll deletes every link of the caller for good (purged with their clicks) and every
// webhook of theirs: their account is going. Calling it again finishes what is left.
func (c *Client) DeleteAll(ctx context.Context) error {
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodDelete, Path: "/internal/links/owners/me", Idempotent: true}, nil)
}

// MsgVerifyEmail is the 403 of a link creation by a signed-in user whose e-mail address is
// not verified yet.
const MsgVerifyEmail = "verify your e-mail address first"

// MsgLinkGone is the 409 of a change bound to a link id whose link no longer holds the code.
const MsgLinkGone = "the link of this request no longer exists"

// RenewRequest is the body of a renewal; days default to 30.
type RenewRequest struct {
	ExpirationDays *int `json:"expiration_days,omitempty"`
}

// EditRequest is the body of PATCH /api/user/links/{code}; DestinationURL is required.
type EditRequest struct {
	DestinationURL *string `json:"destination_url"`
}

// Client calls the link service.
type Client struct{ hc *httpclient.Client }

// New wraps an HTTP client pointed at the link service.
func New(hc *httpclient.Client) *Client { return &Client{hc: hc} }

// Create stores a new link for the caller named by the context's identity token.
func (c *Client) Create(ctx context.Context, req CreateRequest) (CreateResult, error) {
	var out CreateResult
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/links", Body: req}, &out)
	return out, err
}

// Bulk creates up to MaxBulk links for the signed-in caller at once. It is not retried:
// only an Idempotency-Key makes a retry safe.
func (c *Client) Bulk(ctx context.Context, req BulkRequest) (BulkResponse, error) {
	var out BulkResponse
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/links/bulk", Body: req}, &out)
	return out, err
}

// Resolve returns what a redirect of code needs; unknown or deleted codes are a not-found error.
func (c *Client) Resolve(ctx context.Context, code string) (Resolved, error) {
	var out Resolved
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/links/" + url.PathEscape(code) + "/resolve"}, &out)
	return out, err
}

// Info returns the public information of code.
func (c *Client) Info(ctx context.Context, code string) (Info, error) {
	var out Info
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/links/" + url.PathEscape(code) + "/info"}, &out)
	return out, err
}

// Mine lists the caller's links; query holds ListParams, which the link service validates.
func (c *Client) Mine(ctx context.Context, query url.Values) (List, error) {
	var out List
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/links/?" + query.Encode()}, &out)
	return out, err
}

// Dashboard returns the caller's summary.
func (c *Client) Dashboard(ctx context.Context) (Dashboard, error) {
	var out Dashboard
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/links/dashboard"}, &out)
	return out, err
}

// Analytics answers for the caller's link code; query holds days.
func (c *Client) Analytics(ctx context.Context, code string, query url.Values) (analytics.LinkAnalytics, error) {
	var out analytics.LinkAnalytics
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/links/" + url.PathEscape(code) + "/analytics?" + query.Encode()}, &out)
	return out, err
}

// Owned returns the caller's live link code in the owner's view; another owner's is a 404.
func (c *Client) Owned(ctx context.Context, code string) (Link, error) {
	var out LinkResponse
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/links/" + url.PathEscape(code) + "/owned"}, &out)
	return out.Link, err
}

// SetAutoRenew switches the auto-renewal of link code, the link with id linkID ("" for
// whichever link holds code); moderators only. Setting the same value again changes
// nothing, so it is retried.
func (c *Client) SetAutoRenew(ctx context.Context, code, linkID string, on bool) (Link, error) {
	var out LinkResponse
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPut, Path: "/internal/links/" + url.PathEscape(code) + "/auto-renew",
		Body: AutoRenewRequest{AutoRenew: on, LinkID: linkID}}, &out)
	return out.Link, err
}

// Renew pushes the expiry of the caller's link code forward.
func (c *Client) Renew(ctx context.Context, code string, req RenewRequest) (Link, error) {
	var out LinkResponse
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/links/" + url.PathEscape(code) + "/renew", Body: req}, &out)
	return out.Link, err
}

// Edit changes the destination of the caller's link code.
func (c *Client) Edit(ctx context.Context, code string, req EditRequest) (Link, error) {
	var out LinkResponse
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPatch, Path: "/internal/links/" + url.PathEscape(code), Body: req}, &out)
	return out.Link, err
}

// Delete soft-deletes the caller's link code.
func (c *Client) Delete(ctx context.Context, code string) error {
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodDelete, Path: "/internal/links/" + url.PathEscape(code)}, nil)
}

// MaxCodeLength is the longest short code the link service issues or accepts.
const MaxCodeLength = 32

// PlausibleCode reports whether code could name a link: 1 to MaxCodeLength characters of
// A-Z, a-z, 0-9, _ and -. Anything else is unknown without a lookup.
func PlausibleCode(code string) bool {
	if len(code) == 0 || len(code) > MaxCodeLength {
		return false
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// DisableRequest is the body of a moderator's disable of one link or of an owner's links.
type DisableRequest struct {
	Reason *string `json:"reason,omitempty"`
}

// OwnerDisabled says how many of an owner's links a disable switched off.
type OwnerDisabled struct {
	LinksDisabled int64 `json:"links_disabled"`
}

// DisableOwner disables every live, enabled link of ownerID (a ban's deactivate_links) and
// says how many it switched off; each answers 403 on every gateway within a second. Already
// disabled links are left alone, so a retry counts only what is left.
func (c *Client) DisableOwner(ctx context.Context, ownerID string, req DisableRequest) (int64, error) {
	var out OwnerDisabled
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/links/owners/" + url.PathEscape(ownerID) + "/disable", Body: req}, &out)
	return out.LinksDisabled, err
}

// LinkCounts are the stored links by state, for the admin overview: Total is every stored
// link, soft-deleted ones included (Active + Expired + Disabled + Deleted).
type LinkCounts struct {
	Total    int64 `json:"total"`
	Active   int64 `json:"active"`
	Expired  int64 `json:"expired"`
	Disabled int64 `json:"disabled"`
	Deleted  int64 `json:"deleted"`
}

// AdminListParams are the query parameters of the moderators' list.
func AdminListParams() []string {
	return []string{"page", "page_size", "status", "q", "owner_id", "include_deleted"}
}

// AdminList lists anyone's links for a moderator; query holds AdminListParams.
func (c *Client) AdminList(ctx context.Context, query url.Values) (List, error) {
	var out List
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/admin/links?" + query.Encode()}, &out)
	return out, err
}

// Disable switches a link off for its visitors (403) on a moderator's word.
func (c *Client) Disable(ctx context.Context, code string, req DisableRequest) (Link, error) {
	var out LinkResponse
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/admin/links/" + url.PathEscape(code) + "/disable", Body: req}, &out)
	return out.Link, err
}

// Enable switches a disabled link back on.
func (c *Client) Enable(ctx context.Context, code string) (Link, error) {
	var out LinkResponse
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/admin/links/" + url.PathEscape(code) + "/enable"}, &out)
	return out.Link, err
}

// Purge deletes a link for good, with its clicks and reports. A failed call may be
// retried: the deletion resumes where it stopped (and a sweeper finishes it regardless).
func (c *Client) Purge(ctx context.Context, code string) error {
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodDelete, Path: "/internal/admin/links/" + url.PathEscape(code)}, nil)
}

// Counts counts the stored links by state, for the admin overview.
func (c *Client) Counts(ctx context.Context) (LinkCounts, error) {
	var out LinkCounts
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodGet, Path: "/internal/admin/links/counts", Idempotent: true}, &out)
	return out, err
}
