// Package auth is the typed client of the auth service; its request and response types are
// used by the auth service's handlers and by the gateway alike.
package auth

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/httpclient"
)

// Roles, lowest rank first.
const (
	RoleUser       = "user"
	RoleModerator  = "moderator"
	RoleSuperAdmin = "super_admin"
)

// Rank orders roles: user < moderator < super_admin; unknown roles rank below all.
func Rank(role string) int {
	switch role {
	case RoleUser:
		return 1
	case RoleModerator:
		return 2
	case RoleSuperAdmin:
		return 3
	}
	return 0
}

// User statuses as the API shows them; suspended is derived from timeout_until.
const (
	StatusActive    = "active"
	StatusSuspended = "suspended"
	StatusBanned    = "banned"
)

// Auth providers.
const (
	ProviderEmail  = "email"
	ProviderGoogle = "google"
)

// User is the public view of an account (never the password hash).
type User struct {
	ID            string     `json:"id"`
	Email         string     `json:"email"`
	EmailVerified bool       `json:"email_verified"`
	FirstName     string     `json:"first_name"`
	LastName      string     `json:"last_name"`
	Role          string     `json:"role"`
	Status        string     `json:"status"`
	AuthProvider  string     `json:"auth_provider"`
	QuotaLimit    int        `json:"quota_limit"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	LastLoginAt   *time.Time `json:"last_login_at"`
	TimeoutUntil  *time.Time `json:"timeout_until"`
	TimeoutReason *string    `json:"timeout_reason"`
	BanReason     *string    `json:"ban_reason"`
}

// RegisterRequest is the body of POST /api/auth/register. The client's IP hash and
// User-Agent travel in the internal identity token (identity.Caller).
type RegisterRequest struct {
	Email     string `json:"email"`
	Password  string `json:"password"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	// IdempotencyKey is the client's Idempotency-Key header (set by the gateway, never read
	// from the public body): a retry with the same key and body signs in to the account the
	// first attempt created, another body is 422.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// CaptchaToken is the public body's captcha answer: the gateway verifies it (when a
	// verifier is configured) and never forwards it.
	CaptchaToken *string `json:"captcha_token,omitempty"`
}

// LoginRequest is the body of POST /api/auth/login.
type LoginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	// CaptchaToken is the public body's captcha answer, needed once the e-mail has reached
	// its failure ceiling: the gateway verifies it and never forwards it.
	CaptchaToken *string `json:"captcha_token,omitempty"`
	// Captcha is what the gateway found (set by it, never read from the public body):
	// CaptchaOff, CaptchaMissing or CaptchaPassed.
	Captcha string `json:"captcha,omitempty"`
}

// PasswordChangeRequest is the body of POST /api/auth/password.
type PasswordChangeRequest struct {
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
}

// ChangePassword changes the caller's password; every session of theirs ends and the answer
// is a fresh session for the caller to go on with.
func (c *Client) ChangePassword(ctx context.Context, req PasswordChangeRequest) (Session, error) {
	var s Session
	return s, c.call(ctx, http.MethodPost, "/internal/auth/password", req, &s)
}

// AccountExport is GET /api/user/export: what the service keeps of the caller, in one JSON
// document: the account, its live links with their analytics, its API tokens' and sessions'
// metadata (never a secret).
type AccountExport struct {
	ExportedAt time.Time           `json:"exported_at"`
	Account    User                `json:"account"`
	Links      []link.ExportedLink `json:"links"`
	Tokens     []Token             `json:"tokens"`
	Sessions   []SessionInfo       `json:"sessions"`
}

// Export returns the caller's data export.
func (c *Client) Export(ctx context.Context) (AccountExport, error) {
	var out AccountExport
	return out, c.call(ctx, http.MethodGet, "/internal/auth/export", nil, &out)
}

// DeleteAccountRequest is the body of DELETE /api/user/account.
type DeleteAccountRequest struct {
	Password string `json:"password"`
}

// DeleteAccount deletes the caller's account and everything of it.
func (c *Client) DeleteAccount(ctx context.Context, req DeleteAccountRequest) error {
	return c.call(ctx, http.MethodDelete, "/internal/auth/account", req, nil)
}

// VerifyEmailRequest is the body of POST /api/auth/verify-email.
type VerifyEmailRequest struct {
	Token string `json:"token"`
}

// VerifyEmail verifies the address a mailed token was sent to and returns its account.
func (c *Client) VerifyEmail(ctx context.Context, req VerifyEmailRequest) (User, error) {
	var out UserResponse
	return out.User, c.call(ctx, http.MethodPost, "/internal/auth/verify-email", req, &out)
}

// ResendVerification mails the caller's verification link again.
func (c *Client) ResendVerification(ctx context.Context) error {
	return c.call(ctx, http.MethodPost, "/internal/auth/resend-verification", nil, nil)
}

// PasswordResetRequest is the body of POST /api/auth/password-reset.
type PasswordResetRequest struct {
	Email string `json:"email"`
}

// PasswordResetConfirm is the body of POST /api/auth/password-reset/confirm.
type PasswordResetConfirm struct {
	Token       string `json:"token"`
	NewPassword string `json:"new_password"`
}

// RequestPasswordReset mails a reset link to the address if an account has it; the answer
// does not say whether one does.
func (c *Client) RequestPasswordReset(ctx context.Context, req PasswordResetRequest) error {
	return c.call(ctx, http.MethodPost, "/internal/auth/password-reset", req, nil)
}

// ConfirmPasswordReset sets a new password with a mailed token; every session ends.
func (c *Client) ConfirmPasswordReset(ctx context.Context, req PasswordResetConfirm) error {
	return c.call(ctx, http.MethodPost, "/internal/auth/password-reset/confirm", req, nil)
}

// What the gateway found of a login's captcha.
const (
	// CaptchaOff: no verifier is configured; a login over the e-mail's ceiling is a 429.
	CaptchaOff = ""
	// CaptchaMissing: a verifier is configured, the request carried no token.
	CaptchaMissing = "missing"
	// CaptchaPassed: the verifier accepted the request's token.
	CaptchaPassed = "passed"
)

// MsgCaptchaRequired is the 400 of a login over its e-mail's failure ceiling without a
// captcha, when a verifier is configured.
const MsgCaptchaRequired = "captcha_token is required: this e-mail has too many failed logins"

// GoogleRequest is the body of POST /api/auth/google.
type GoogleRequest struct {
	IDToken string `json:"id_token"`
}

// Session is a freshly issued session: the gateway puts Token into the go_session cookie.
type Session struct {
	User      User      `json:"user"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// TokenRequest names a session by its token (validate, logout).
type TokenRequest struct {
	Token string `json:"token"`
}

// UserResponse is {"user": User}.
type UserResponse struct {
	User User `json:"user"`
}

// IDPConfig is the public client configuration of the identity provider.
type IDPConfig struct {
	Enabled  bool   `json:"enabled"`
	Provider string `json:"provider"`
	ClientID string `json:"client_id,omitempty"`
	Issuer   string `json:"issuer,omitempty"`
	// AuthorizationEndpoint is where a browser signs in for an ID token (the web
	// application's "Sign in with Google"); absent when none is known.
	AuthorizationEndpoint string `json:"authorization_endpoint,omitempty"`
}

// RoleRequest is the body of POST /api/admin/users/{id}/role.
type RoleRequest struct {
	Role string `json:"role"`
}

// LoginRecord is one login attempt.
type LoginRecord struct {
	ID        string    `json:"id"`
	UserID    string    `json:"user_id,omitempty"`
	Email     string    `json:"email"`
	Success   bool      `json:"success"`
	Method    string    `json:"method"`
	Reason    string    `json:"reason,omitempty"`
	IPHash    string    `json:"ip_hash"`
	UserAgent string    `json:"user_agent"`
	CreatedAt time.Time `json:"created_at"`
}

// LoginRecords is a page of login records.
type LoginRecords struct {
	Records  []LoginRecord `json:"records"`
	Page     int           `json:"page"`
	PageSize int           `json:"page_size"`
	Total    int64         `json:"total"`
}

// UserListParams are the query parameters of the admin user list.
func UserListParams() []string { return []string{"q", "role", "status", "page", "page_size"} }

// UserList is a page of accounts for moderators, newest first.
type UserList struct {
	Users    []User `json:"users"`
	Page     int    `json:"page"`
	PageSize int    `json:"page_size"`
	Total    int64  `json:"total"`
}

// UserCounts counts the accounts by public status for the admin overview.
type UserCounts struct {
	Total     int64 `json:"total"`
	Active    int64 `json:"active"`
	Suspended int64 `json:"suspended"`
	Banned    int64 `json:"banned"`
}

// TimeoutRequest is the body of POST /api/admin/users/{id}/timeout. Both fields are
// required: pointers tell a missing one from a zero value, so that it is refused, not used.
type TimeoutRequest struct {
	DurationSeconds *int64  `json:"duration_seconds"`
	Reason          *string `json:"reason"`
}

// BanRequest is the body of POST /api/admin/users/{id}/ban; Reason is required and
// DeactivateLinks defaults to false.
type BanRequest struct {
	Reason          *string `json:"reason"`
	DeactivateLinks *bool   `json:"deactivate_links"`
}

// BanResponse is the banned account and how many of its links the ban disabled (0 when
// deactivate_links was not asked for).
type BanResponse struct {
	User          User  `json:"user"`
	LinksDisabled int64 `json:"links_disabled"`
}

// Client calls the auth service.
type Client struct{ hc *httpclient.Client }

// New wraps an HTTP client pointed at the auth service.
func New(hc *httpclient.Client) *Client { return &Client{hc: hc} }

func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	return c.hc.Do(ctx, httpclient.Request{Method: method, Path: path, Body: body}, out)
}

// Register creates an account and its first session.
func (c *Client) Register(ctx context.Context, req RegisterRequest) (Session, error) {
	var s Session
	return s, c.call(ctx, http.MethodPost, "/internal/auth/register", req, &s)
}

// Login checks e-mail and password and issues a fresh session.
func (c *Client) Login(ctx context.Context, req LoginRequest) (Session, error) {
	var s Session
	return s, c.call(ctx, http.MethodPost, "/internal/auth/login", req, &s)
}

// Google verifies an identity provider's ID token and issues a fresh session.
func (c *Client) Google(ctx context.Context, req GoogleRequest) (Session, error) {
	var s Session
	return s, c.call(ctx, http.MethodPost, "/internal/auth/google", req, &s)
}

// Logout revokes the session; revoking an unknown one is not an error.
func (c *Client) Logout(ctx context.Context, token string) error {
	return c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/auth/logout",
		Body: TokenRequest{Token: token}, Idempotent: true}, nil)
}

// Validate returns the current user of a session; an unknown, expired or revoked token is an
// unauthenticated error. It reads the user fresh, so a ban counts on the next request.
func (c *Client) Validate(ctx context.Context, token string) (Validated, error) {
	var r Validated
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/auth/sessions/validate",
		Body: TokenRequest{Token: token}, Idempotent: true}, &r)
	return r, err
}

// Validated is a live session's user and the session's public id.
type Validated struct {
	User      User   `json:"user"`
	SessionID string `json:"session_id"`
}

// SessionInfo is one of the caller's sessions as GET /api/user/sessions lists it: never its
// token, never an address.
type SessionInfo struct {
	ID         string     `json:"id"`
	Current    bool       `json:"current"`
	CreatedAt  time.Time  `json:"created_at"`
	LastSeenAt *time.Time `json:"last_seen_at"`
	UserAgent  string     `json:"user_agent"`
}

// SessionList is the body of GET /api/user/sessions, newest first.
type SessionList struct {
	Sessions []SessionInfo `json:"sessions"`
}

// RevokeOthers is the session id that ends every session of the caller but the current one.
const RevokeOthers = "others"

// Sessions lists the caller's live sessions.
func (c *Client) Sessions(ctx context.Context) (SessionList, error) {
	var out SessionList
	return out, c.call(ctx, http.MethodGet, "/internal/auth/sessions", nil, &out)
}

// RevokeSession ends one of the caller's sessions by id, or every other one (RevokeOthers);
// an unknown id is a 404.
func (c *Client) RevokeSession(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/internal/auth/sessions/"+url.PathEscape(id), nil, nil)
}

// IDPConfig returns the public identity provider configuration.
func (c *Client) IDPConfig(ctx context.Context) (IDPConfig, error) {
	var cfg IDPConfig
	return cfg, c.call(ctx, http.MethodGet, "/internal/auth/idp-config", nil, &cfg)
}

// SetRole changes a user's role on behalf of the caller in the context's identity token.
func (c *Client) SetRole(ctx context.Context, userID, role string) (User, error) {
	var r UserResponse
	return r.User, c.call(ctx, http.MethodPost, "/internal/auth/users/"+url.PathEscape(userID)+"/role", RoleRequest{Role: role}, &r)
}

// LoginRecords lists login records; query carries the public filters and paging unchanged.
func (c *Client) LoginRecords(ctx context.Context, query url.Values) (LoginRecords, error) {
	var r LoginRecords
	return r, c.call(ctx, http.MethodGet, "/internal/auth/login-records?"+query.Encode(), nil, &r)
}

// Users lists accounts for a moderator; query carries UserListParams unchanged.
func (c *Client) Users(ctx context.Context, query url.Values) (UserList, error) {
	var l UserList
	return l, c.call(ctx, http.MethodGet, "/internal/auth/users?"+query.Encode(), nil, &l)
}

// UserCounts counts the accounts by status for a moderator.
func (c *Client) UserCounts(ctx context.Context) (UserCounts, error) {
	var n UserCounts
	return n, c.call(ctx, http.MethodGet, "/internal/auth/users/counts", nil, &n)
}

// Timeout suspends a user for a while on behalf of the moderator in the context's identity
// token.
func (c *Client) Timeout(ctx context.Context, id string, req TimeoutRequest) (User, error) {
	var r UserResponse
	return r.User, c.call(ctx, http.MethodPost, "/internal/auth/users/"+url.PathEscape(id)+"/timeout", req, &r)
}

// Ban bans a user, and disables their links if asked, on behalf of the moderator in the
// context's identity token.
func (c *Client) Ban(ctx context.Context, id string, req BanRequest) (BanResponse, error) {
	var r BanResponse
	return r, c.call(ctx, http.MethodPost, "/internal/auth/users/"+url.PathEscape(id)+"/ban", req, &r)
}

// Unban lifts a user's ban and timeout on behalf of the moderator in the context's identity
// token; their links stay as they are.
func (c *Client) Unban(ctx context.Context, id string) (User, error) {
	var r UserResponse
	return r.User, c.call(ctx, http.MethodPost, "/internal/auth/users/"+url.PathEscape(id)+"/unban", nil, &r)
}
