// Package quota is the typed client of the quota service: sliding-window counters that are
// reserved before an action and released if the action fails, so only successes count.
package quota

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/httpclient"
	"github.com/linkmesh/linkmesh/pkg/ratelimit"
)

// Scopes name the counters the quota service keeps; each has its own limit and window.
const (
	// ScopeAnonymousCreate counts anonymous link creations per identity key.
	ScopeAnonymousCreate = "anonymous_create"
	// ScopeLoginEmailClient and ScopeLoginEmail count failed password logins: per pair of
	// e-mail and client identity key (keyed by a hash of the pair), and per e-mail over all
	// clients (keyed by a hash of it) up to a much higher ceiling, so that one stranger
	// cannot keep a known account locked out. A unit is reserved before the password is
	// checked and released when it was right, so only failures stay counted.
	ScopeLoginEmailClient = "login_email_client"
	ScopeLoginEmail       = "login_email"
	// ScopeLoginIP counts failed ID-token logins per client identity key, the same way.
	ScopeLoginIP = "login_ip"
	// ScopeLoginClient counts failed password logins per client identity key over all
	// e-mails, the same way: one client spraying passwords over many e-mails meets it.
	ScopeLoginClient = "login_client"
	// ScopeRegister counts account registrations per client identity key. A registration
	// keeps its unit; only our own failure gives it back.
	ScopeRegister = "register"
	// ScopeResetClient and ScopeResetEmail count password-reset requests, per client
	// identity key and per e-mail (keyed by its hash): ResetLimitClient and ResetLimitEmail
	// per ResetWindow, so nobody floods an inbox with reset mail. Every request keeps its
	// unit.
	ScopeResetClient = "password_reset_client"
	// ScopeVerifyResend counts the verification mails an account asks for again, keyed by
	// user id: ResendLimit per ResendWindow.
	ScopeVerifyResend = "verify_resend"
	// ScopeExport counts an account's data exports, keyed by user id: ExportLimit per
	// ExportWindow (each reads a year of analytics of every link).
	ScopeExport     = "account_export"
	ScopeResetEmail = "password_reset_email"
	// ScopeUserCreate counts a registered user's link creations per user id, up to the
	// account's own quota_limit, which every reservation carries.
	ScopeUserCreate = "user_create"
	// ScopeReport counts abuse reports per identity key: ReportLimit per ReportWindow.
	ScopeReport = "report"
	// ScopeAPIToken counts the requests of one API token (keyed by its id): the
	// configured rate per TokenWindow. Every request keeps its unit.
	ScopeAPIToken = "api_token"
)

// TokenWindow is the window of an API token's request rate, as the contract fixes it.
const TokenWindow = time.Minute

// The size of the data export window.
const (
	ExportLimit  = 10
	ExportWindow = time.Hour
)

// The size of the verification resend window, as the contract fixes it.
const (
	ResendLimit  = 3
	ResendWindow = time.Hour
)

// The sizes of the password-reset windows.
const (
	ResetLimitClient = 10
	ResetLimitEmail  = 3
	ResetWindow      = time.Hour
)

// The size of the report window, as the contract fixes it.
const (
	ReportLimit  = 20
	ReportWindow = time.Hour
)

// ReserveRequest asks for one unit of scope for key.
type ReserveRequest struct {
	Scope string `json:"scope"`
	// Key identifies the caller without a raw IP (an HMAC of it, or a user id).
	Key string `json:"key"`
	// Limit is the caller's own limit, required by per-caller scopes (ScopeUserCreate) and
	// refused by the others.
	Limit *int `json:"limit,omitempty"`
	// Count, when set (1–100), asks for that many units at once: as many are taken as the
	// window has room for, named by the answer's IDs. Zero takes one, named by ID.
	Count int `json:"count,omitempty"`
}

// Reservation is the answer to a reserve call.
type Reservation struct {
	Allowed bool `json:"allowed"`
	// ID names the unit taken, for Release; empty when not allowed.
	ID string `json:"id,omitempty"`
	// IDs name the units a reservation with Count took, each released on its own.
	IDs       []string `json:"ids,omitempty"`
	Limit     int      `json:"limit"`
	Used      int      `json:"used"`
	Remaining int      `json:"remaining"`
	// RetryAfterSeconds is how long until a unit frees up; set when not allowed.
	RetryAfterSeconds int       `json:"retry_after_seconds,omitempty"`
	WindowSeconds     int       `json:"window_seconds"`
	ResetsAt          time.Time `json:"resets_at"`
}

// ReleaseRequest gives back a unit whose action failed.
type ReleaseRequest struct {
	Scope string `json:"scope"`
	Key   string `json:"key"`
	ID    string `json:"id"`
}

// Client calls the quota service.
type Client struct{ hc *httpclient.Client }

// New wraps an HTTP client pointed at the quota service.
func New(hc *httpclient.Client) *Client { return &Client{hc: hc} }

// Reserve takes one unit if the window has room. It is not retried: a retry could take two.
func (c *Client) Reserve(ctx context.Context, req ReserveRequest) (Reservation, error) {
	var out Reservation
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/quota/reserve", Body: req}, &out)
	return out, err
}

// Usage reads the counter req names without taking a unit; Allowed is meaningless there.
// It changes nothing, so it is retried.
func (c *Client) Usage(ctx context.Context, req ReserveRequest) (Reservation, error) {
	var out Reservation
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/quota/usage", Body: req, Idempotent: true}, &out)
	return out, err
}

// Release returns a reserved unit; releasing twice is harmless, so it is retried.
func (c *Client) Release(ctx context.Context, req ReleaseRequest) error {
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/quota/release", Body: req, IdempotencyKey: req.ID}, nil)
}

// Reserver takes units; *Client satisfies it.
type Reserver interface {
	Reserve(ctx context.Context, req ReserveRequest) (Reservation, error)
}

// Take reserves one unit of scope for key and returns what gives it back. It is the one
// policy of every service that limits an action: a refused unit is a 429 with deniedMsg and
// the window's Retry-After; any failure of the quota service (even a 400 from one that lacks
// the scope) is a 503, so an action never skips its limit and a caller never sees the quota
// service's own complaint as theirs.
func Take(ctx context.Context, r Reserver, req ReserveRequest, deniedMsg string) (ReleaseRequest, error) {
	rel, _, err := TakeReporting(ctx, r, req, deniedMsg, "")
	return rel, err
}

// TakeReporting is Take that also reports the window after the reservation under the policy
// name (see ratelimit): returned on success, and carried by the 429 of a refusal.
func TakeReporting(ctx context.Context, r Reserver, req ReserveRequest, deniedMsg, policy string) (ReleaseRequest, ratelimit.Window, error) {
	scope, key := req.Scope, req.Key
	res, err := r.Reserve(ctx, req)
	if err != nil {
		if e, ok := errs.As(err); ok && e.Kind == errs.KindUnavailable {
			return ReleaseRequest{}, ratelimit.Window{}, err
		}
		return ReleaseRequest{}, ratelimit.Window{}, errs.Unavailable("quota service unavailable", err)
	}
	w := res.Window(policy, time.Now())
	if !res.Allowed {
		e := errs.TooMany(deniedMsg, time.Duration(res.RetryAfterSeconds)*time.Second)
		if policy != "" {
			w.Remaining, w.ResetSeconds = 0, max(w.ResetSeconds, res.RetryAfterSeconds)
			e.RateLimits = []ratelimit.Window{w}
		}
		return ReleaseRequest{}, w, e
	}
	return ReleaseRequest{Scope: scope, Key: key, ID: res.ID}, w, nil
}

// Window is the reservation's window under the policy name as of now: the RateLimit fields
// of the action it counted.
func (r Reservation) Window(policy string, now time.Time) ratelimit.Window {
	w := ratelimit.Window{Name: policy, Limit: r.Limit, WindowSeconds: r.WindowSeconds, Remaining: max(r.Remaining, 0)}
	if !r.ResetsAt.IsZero() && r.ResetsAt.After(now) {
		w.ResetSeconds = int(math.Ceil(r.ResetsAt.Sub(now).Seconds()))
	}
	return w
}
