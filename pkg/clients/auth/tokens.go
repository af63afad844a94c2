package auth

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/linkmesh/linkmesh/pkg/httpclient"
	"github.com/linkmesh/linkmesh/pkg/ratelimit"
)

// Scopes an API token may hold; each opens the routes the contract lists for it.
const (
	ScopeLinksRead     = "links:read"
	ScopeLinksWrite    = "links:write"
	ScopeAnalyticsRead = "analytics:read"
	ScopeWebhooksWrite = "webhooks:write"
)

// TokenScopes lists every scope, in the order the API documents them.
func TokenScopes() []string {
	return []string{ScopeLinksRead, ScopeLinksWrite, ScopeAnalyticsRead, ScopeWebhooksWrite}
}

// TokenSecretPrefix starts every API token secret, so that secret scanners and people can tell
// one at a glance, and the gateway can tell it from a session token.
const TokenSecretPrefix = "lm_"

// MaxTokenSecret bounds what is worth looking up as a token secret; real ones are 46 bytes.
const MaxTokenSecret = 128

// PlausibleTokenSecret reports whether s could be a token secret at all; others are refused
// without asking the auth service.
func PlausibleTokenSecret(s string) bool {
	return strings.HasPrefix(s, TokenSecretPrefix) && len(s) > len(TokenSecretPrefix) && len(s) <= MaxTokenSecret
}

// Token is the public view of an API token: never its secret or its hash.
type Token struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Scopes     []string   `json:"scopes"`
	Prefix     string     `json:"prefix"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// TokenCreateRequest is the body of POST /api/user/tokens. Pointers tell a missing field
// from an empty one.
type TokenCreateRequest struct {
	Name          *string   `json:"name"`
	Scopes        *[]string `json:"scopes"`
	ExpiresInDays *int      `json:"expires_in_days"`
}

// TokenCreated is a new token and its secret, which is shown only in this answer.
type TokenCreated struct {
	Token  Token  `json:"token"`
	Secret string `json:"secret"`
}

// TokenList is {"tokens": [...]}, the caller's live tokens, newest first.
type TokenList struct {
	Tokens []Token `json:"tokens"`
}

// TokenAuth is what a validated token request is: the owner as of now, the token's id and
// scopes, and its request window after this request's unit was taken. When Allowed is false
// the window is spent and RetryAfterSeconds says for how long.
type TokenAuth struct {
	User              User             `json:"user"`
	TokenID           string           `json:"token_id"`
	Scopes            []string         `json:"scopes"`
	Allowed           bool             `json:"allowed"`
	Rate              ratelimit.Window `json:"rate"`
	RetryAfterSeconds int              `json:"retry_after_seconds,omitempty"`
}

// HasScope reports whether the token holds scope.
func (a TokenAuth) HasScope(scope string) bool { return slices.Contains(a.Scopes, scope) }

// CreateToken makes an API token for the session user in the context's identity token.
func (c *Client) CreateToken(ctx context.Context, req TokenCreateRequest) (TokenCreated, error) {
	var out TokenCreated
	return out, c.call(ctx, http.MethodPost, "/internal/auth/tokens", req, &out)
}

// Tokens lists the caller's live tokens.
func (c *Client) Tokens(ctx context.Context) (TokenList, error) {
	var out TokenList
	return out, c.call(ctx, http.MethodGet, "/internal/auth/tokens", nil, &out)
}

// RevokeToken deletes one of the caller's tokens; another's or an unknown one is a 404.
func (c *Client) RevokeToken(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, "/internal/auth/tokens/"+url.PathEscape(id), nil, nil)
}

// ValidateToken checks a token secret, takes one unit of its request window and returns
// who it speaks for; an unknown, revoked or expired secret is an unauthenticated error.
// It is not retried: a retry would take a second unit.
func (c *Client) ValidateToken(ctx context.Context, secret string) (TokenAuth, error) {
	var out TokenAuth
	err := c.hc.Do(ctx, httpclient.Request{Method: http.MethodPost, Path: "/internal/auth/tokens/validate",
		Body: TokenRequest{Token: secret}}, &out)
	return out, err
}
