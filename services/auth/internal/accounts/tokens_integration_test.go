package accounts_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

func tokenReq(name string, scopes []string, days *int) auth.TokenCreateRequest {
	return auth.TokenCreateRequest{Name: &name, Scopes: &scopes, ExpiresInDays: days}
}

var secretShape = regexp.MustCompile(`^lm_[0-9A-Za-z]{43}$`)

// A token is created with its scopes and expiry, its secret shown once and stored only as a
// hash; it validates to its owner and scopes with its window; revoked, it is a 401 at once.
func TestTokenLifecycle(t *testing.T) {
	e := newEnv(t)
	e.quota.limits[quota.ScopeAPIToken] = 600
	ctx := context.Background()
	u := e.register(t, "tok@example.com")
	days := 7
	created, err := e.svc.CreateToken(ctx, caller(u.ID, auth.RoleUser),
		tokenReq("  CI deploy  ", []string{auth.ScopeAnalyticsRead, auth.ScopeLinksWrite, auth.ScopeLinksWrite}, &days))
	if err != nil {
		t.Fatal(err)
	}
	tok := created.Token
	now := e.clock.Now().UTC()
	if !secretShape.MatchString(created.Secret) || tok.Prefix != created.Secret[:8] || tok.Name != "CI deploy" ||
		strings.Join(tok.Scopes, ",") != "links:write,analytics:read" || !tok.CreatedAt.Equal(now) ||
		!tok.ExpiresAt.Equal(now.AddDate(0, 0, 7)) || tok.LastUsedAt != nil || tok.ID == "" {
		t.Fatalf("created %+v secret %q", tok, created.Secret)
	}
	// Nothing stored holds the secret: only its SHA-256.
	raw, err := e.db.Collection("api_tokens").FindOne(ctx, bson.D{{Key: "_id", Value: tok.ID}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(raw.String())
	if strings.Contains(string(doc), created.Secret) || strings.Contains(string(doc), created.Secret[3:]) {
		t.Fatalf("the stored token holds its secret: %s", doc)
	}
	if !strings.Contains(raw.String(), accounts.HashToken(created.Secret)) {
		t.Fatalf("the stored token lacks its hash: %s", raw)
	}

	ta, err := e.svc.ValidateToken(ctx, created.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if ta.User.ID != u.ID || ta.TokenID != tok.ID || !ta.Allowed || !ta.HasScope(auth.ScopeLinksWrite) || ta.HasScope(auth.ScopeLinksRead) ||
		ta.Rate.Name != "token" || ta.Rate.Limit != 600 {
		t.Fatalf("validated %+v", ta)
	}
	if got := e.quota.used(quota.ScopeAPIToken, tok.ID); got != 1 {
		t.Fatalf("a validation takes one unit of the token's window: %d", got)
	}
	// last_used_at is recorded in the background.
	deadline := time.Now().Add(5 * time.Second)
	for {
		list, err := e.svc.Tokens(ctx, caller(u.ID, auth.RoleUser))
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Tokens) == 1 && list.Tokens[0].LastUsedAt != nil && list.Tokens[0].LastUsedAt.Equal(now) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("last_used_at never recorded: %+v", list)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Another user sees none of it and cannot revoke it.
	other := e.register(t, "other@example.com")
	if list, _ := e.svc.Tokens(ctx, caller(other.ID, auth.RoleUser)); len(list.Tokens) != 0 {
		t.Fatalf("another user's list: %+v", list)
	}
	wantErr(t, e.svc.RevokeToken(ctx, caller(other.ID, auth.RoleUser), tok.ID), errs.KindNotFound, "API token not found")
	// A token may not manage tokens.
	viaToken := caller(u.ID, auth.RoleUser)
	viaToken.TokenID = tok.ID
	wantErr(t, e.svc.RevokeToken(ctx, viaToken, tok.ID), errs.KindForbidden, "API tokens cannot be managed with an API token")
	_, err = e.svc.CreateToken(ctx, viaToken, tokenReq("x", []string{auth.ScopeLinksRead}, nil))
	wantErr(t, err, errs.KindForbidden, "API tokens cannot be managed with an API token")

	// Another replica that read the token just before its revocation refuses it within a
	// second (it reuses a token for half of one); the revoking replica, and one that never
	// read it, at once.
	replica := e.service(t)
	if _, err := replica.ValidateToken(ctx, created.Secret); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RevokeToken(ctx, caller(u.ID, auth.RoleUser), tok.ID); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	_, err = e.svc.ValidateToken(ctx, created.Secret)
	wantErr(t, err, errs.KindUnauthenticated, "API token invalid, expired or revoked")
	_, err = e.service(t).ValidateToken(ctx, created.Secret)
	wantErr(t, err, errs.KindUnauthenticated, "API token invalid, expired or revoked")
	for {
		if _, err := replica.ValidateToken(ctx, created.Secret); err != nil {
			wantErr(t, err, errs.KindUnauthenticated, "API token invalid, expired or revoked")
			break
		}
		if time.Since(revoked) > time.Second {
			t.Fatal("a replica still accepts a token revoked a second ago")
		}
		time.Sleep(10 * time.Millisecond)
	}
	wantErr(t, e.svc.RevokeToken(ctx, caller(u.ID, auth.RoleUser), tok.ID), errs.KindNotFound, "API token not found")
}

func TestTokenExpiryAndRefusals(t *testing.T) {
	e := newEnv(t)
	e.quota.limits[quota.ScopeAPIToken] = 2
	ctx := context.Background()
	u := e.register(t, "exp@example.com")
	days := 1
	created, err := e.svc.CreateToken(ctx, caller(u.ID, auth.RoleUser), tokenReq("short", []string{auth.ScopeLinksRead}, &days))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ta, err := e.svc.ValidateToken(ctx, created.Secret)
		if err != nil {
			t.Fatal(err)
		}
		if ta.Allowed != (i < 2) || (i == 2 && (ta.RetryAfterSeconds < 1 || ta.Rate.Remaining != 0)) {
			t.Fatalf("request %d: %+v", i, ta)
		}
	}
	e.quota.setDown(true)
	_, err = e.svc.ValidateToken(ctx, created.Secret)
	if !errs.IsKind(err, errs.KindUnavailable) {
		t.Fatalf("a quota outage must fail closed: %v", err)
	}
	e.quota.setDown(false)
	e.clock.Advance(24*time.Hour + time.Second)
	_, err = e.svc.ValidateToken(ctx, created.Secret)
	wantErr(t, err, errs.KindUnauthenticated, "API token invalid, expired or revoked")
	if list, _ := e.svc.Tokens(ctx, caller(u.ID, auth.RoleUser)); len(list.Tokens) != 0 {
		t.Fatalf("an expired token is listed: %+v", list)
	}
	for _, s := range []string{"", "lm_", "nope", "lm_" + strings.Repeat("a", 200), "lm_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"} {
		_, err := e.svc.ValidateToken(ctx, s)
		wantErr(t, err, errs.KindUnauthenticated, "API token invalid, expired or revoked")
	}
	_, err = e.svc.CreateToken(ctx, caller("", ""), tokenReq("x", []string{auth.ScopeLinksRead}, nil))
	wantErr(t, err, errs.KindUnauthenticated, "authentication required")
}

func TestTokenRequestValidation(t *testing.T) {
	str := func(s string) *string { return &s }
	list := func(s ...string) *[]string { return &s }
	n := func(i int) *int { return &i }
	cases := []struct {
		req  auth.TokenCreateRequest
		want string
	}{
		{auth.TokenCreateRequest{Scopes: list(auth.ScopeLinksRead)}, "name is required"},
		{auth.TokenCreateRequest{Name: str("   "), Scopes: list(auth.ScopeLinksRead)}, "name must be between 1 and 64 characters"},
		{auth.TokenCreateRequest{Name: str(strings.Repeat("é", 65)), Scopes: list(auth.ScopeLinksRead)}, "name must be between 1 and 64 characters"},
		{auth.TokenCreateRequest{Name: str("a\x00b"), Scopes: list(auth.ScopeLinksRead)}, "name must not contain control characters"},
		{auth.TokenCreateRequest{Name: str("a")}, "scopes must list at least one of links:read, links:write, analytics:read, webhooks:write"},
		{auth.TokenCreateRequest{Name: str("a"), Scopes: list()}, "scopes must list at least one of links:read, links:write, analytics:read, webhooks:write"},
		{auth.TokenCreateRequest{Name: str("a"), Scopes: list("admin")}, `scopes: unknown scope "admin" (known: links:read, links:write, analytics:read, webhooks:write)`},
		{auth.TokenCreateRequest{Name: str("a"), Scopes: list(auth.ScopeLinksRead), ExpiresInDays: n(0)}, "expires_in_days must be between 1 and 365"},
		{auth.TokenCreateRequest{Name: str("a"), Scopes: list(auth.ScopeLinksRead), ExpiresInDays: n(366)}, "expires_in_days must be between 1 and 365"},
	}
	for _, tc := range cases {
		_, err := accounts.ValidateTokenRequest(tc.req)
		wantErr(t, err, errs.KindInvalid, tc.want)
	}
	got, err := accounts.ValidateTokenRequest(auth.TokenCreateRequest{Name: str(strings.Repeat("é", 64)), Scopes: list(auth.ScopeWebhooksWrite, auth.ScopeLinksRead)})
	if err != nil || got.Days != 90 || strings.Join(got.Scopes, ",") != "links:read,webhooks:write" {
		t.Fatalf("%+v %v", got, err)
	}
}

// At most 20 live tokens per account, however many creations race; an expired token's slot
// is reused.
func TestTokenBoundUnderRaces(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	u := e.register(t, "race@example.com")
	c := caller(u.ID, auth.RoleUser)
	one := 1
	if _, err := e.svc.CreateToken(ctx, c, tokenReq("soon expired", []string{auth.ScopeLinksRead}, &one)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]error, 30)
	replicas := []*accounts.Service{e.svc, e.service(t), e.service(t)}
	for i := range results {
		wg.Go(func() {
			_, results[i] = replicas[i%3].CreateToken(ctx, c, tokenReq(fmt.Sprint("t", i), []string{auth.ScopeLinksRead}, nil))
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range results {
		switch {
		case err == nil:
			ok++
		case !errs.IsKind(err, errs.KindConflict):
			t.Fatalf("unexpected failure: %v", err)
		}
	}
	list, _ := e.svc.Tokens(ctx, c)
	if ok != 19 || len(list.Tokens) != 20 {
		t.Fatalf("%d creations succeeded, %d tokens listed; want 19 and 20", ok, len(list.Tokens))
	}
	_, err := e.svc.CreateToken(ctx, c, tokenReq("one too many", []string{auth.ScopeLinksRead}, nil))
	wantErr(t, err, errs.KindConflict, "at most 20 live API tokens per account")
	e.clock.Advance(25 * time.Hour)
	if _, err := e.svc.CreateToken(ctx, c, tokenReq("in the expired one's slot", []string{auth.ScopeLinksRead}, nil)); err != nil {
		t.Fatalf("the expired token's slot must be free: %v", err)
	}
	if list, _ := e.svc.Tokens(ctx, c); len(list.Tokens) != 20 {
		t.Fatalf("%d live tokens", len(list.Tokens))
	}
}
