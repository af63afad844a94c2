package accounts

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"math/big"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/ratelimit"
)

// Limits of API tokens, as the contract fixes them.
const (
	MaxLiveTokens         = 20
	MaxTokenNameLength    = 64
	DefaultTokenDays      = 90
	MaxTokenDays          = 365
	tokenSecretBytes      = 32 // 256 bits
	tokenSecretDigits     = 43 // base62 digits of 256 bits
	tokenPrefixLength     = 8
	tokenInsertAttempts   = 2 * MaxLiveTokens
	lastUsedGranularity   = time.Minute
	tokenTouchBudget      = 2 * time.Second
	maxTouched            = 1 << 16
	msgTokenInvalid       = "API token invalid, expired or revoked"
	msgTokensNeedSession  = "API tokens cannot be managed with an API token"
	msgTooManyTokens      = "at most 20 live API tokens per account"
	msgTokenRateExhausted = "API token rate limit exceeded"
)

// APIToken is a stored personal access token. The secret itself is never stored, only its
// hash; Slot (0 to MaxLiveTokens-1) is unique per owner, which is what bounds the number of
// live tokens under concurrent creations.
type APIToken struct {
	ID         string
	Hash       string
	UserID     string
	Slot       int
	Name       string
	Scopes     []string
	Prefix     string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	LastUsedAt *time.Time
}

// View is the public view of t.
func (t APIToken) View() auth.Token {
	return auth.Token{ID: t.ID, Name: t.Name, Scopes: slices.Clone(t.Scopes), Prefix: t.Prefix, CreatedAt: t.CreatedAt,
		ExpiresAt: t.ExpiresAt, LastUsedAt: t.LastUsedAt}
}

// Errors token stores return.
var (
	ErrTokenNotFound = errors.New("api token not found")
	ErrSlotTaken     = errors.New("api token slot taken")
)

// TokenStore persists API tokens; implemented by internal/store. Expired tokens are deleted
// by the database (a TTL index), within about a minute.
type TokenStore interface {
	// InsertToken stores t; ErrSlotTaken when its owner already has a token in t.Slot.
	InsertToken(ctx context.Context, t APIToken) error
	// TokensOf returns every stored token of userID, expired ones included, newest first.
	TokensOf(ctx context.Context, userID string) ([]APIToken, error)
	// TokenByHash returns the token with hash unless it has expired at now.
	TokenByHash(ctx context.Context, hash string, now time.Time) (APIToken, error)
	// DeleteToken deletes userID's token id; false when there is none.
	DeleteToken(ctx context.Context, userID, id string) (bool, error)
	// DeleteExpiredTokens deletes userID's tokens that have expired at now.
	DeleteExpiredTokens(ctx context.Context, userID string, now time.Time) error
	// TouchToken sets last_used_at to at unless it is already later than at minus the
	// granularity: one write per token and minute, whatever the replicas do.
	TouchToken(ctx context.Context, id string, at time.Time, granularity time.Duration) error
}

// TokenRequest is a validated token creation.
type TokenRequest struct {
	Name   string
	Scopes []string
	Days   int
}

// ValidateTokenRequest checks a creation body field by field and returns the normalized
// request (scopes de-duplicated, in the API's order) or a 400 naming the first bad field.
func ValidateTokenRequest(req auth.TokenCreateRequest) (TokenRequest, error) {
	if req.Name == nil {
		return TokenRequest{}, errs.Invalid("name is required")
	}
	name := strings.TrimSpace(*req.Name)
	if n := utf8.RuneCountInString(name); n < 1 || n > MaxTokenNameLength {
		return TokenRequest{}, errs.Invalid("name must be between 1 and %d characters", MaxTokenNameLength)
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return TokenRequest{}, errs.Invalid("name must not contain control characters")
	}
	if req.Scopes == nil || len(*req.Scopes) == 0 {
		return TokenRequest{}, errs.Invalid("scopes must list at least one of %s", strings.Join(auth.TokenScopes(), ", "))
	}
	var scopes []string
	for _, known := range auth.TokenScopes() {
		if slices.Contains(*req.Scopes, known) {
			scopes = append(scopes, known)
		}
	}
	for _, s := range *req.Scopes {
		if !slices.Contains(auth.TokenScopes(), s) {
			return TokenRequest{}, errs.Invalid("scopes: unknown scope %q (known: %s)", clip(s, 64), strings.Join(auth.TokenScopes(), ", "))
		}
	}
	days := DefaultTokenDays
	if d := req.ExpiresInDays; d != nil {
		if *d < 1 || *d > MaxTokenDays {
			return TokenRequest{}, errs.Invalid("expires_in_days must be between 1 and %d", MaxTokenDays)
		}
		days = *d
	}
	return TokenRequest{Name: name, Scopes: scopes, Days: days}, nil
}

// clip cuts s to at most n bytes on a character boundary, for echoing input in a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// NewTokenSecret returns a fresh secret ("lm_" and 43 base62 digits of 256 random bits)
// and the hash under which it is stored.
func NewTokenSecret() (secret, hash string, err error) {
	var b [tokenSecretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("read token secret: %w", err)
	}
	digits := new(big.Int).SetBytes(b[:]).Text(62)
	secret = auth.TokenSecretPrefix + strings.Repeat("0", tokenSecretDigits-len(digits)) + digits
	return secret, HashToken(secret), nil
}

// tokenManager refuses callers that may not manage tokens: anonymous ones, and requests
// made with a token (a leaked token must not be able to mint more, or outlive its revoker).
func tokenManager(caller identity.Caller) error {
	if caller.IsAnonymous() || caller.UserID == "" {
		return errs.E(errs.KindUnauthenticated, "authentication required")
	}
	if caller.TokenID != "" {
		return errs.Forbidden(msgTokensNeedSession)
	}
	return nil
}

// CreateToken makes an API token for caller and returns it with its secret, which is never
// shown again. At most MaxLiveTokens live tokens exist per account: each holds a slot of
// its owner, unique in the store, so racing creations cannot pass the bound; a slot held by
// an expired token that the database has not deleted yet is freed first.
func (s *Service) CreateToken(ctx context.Context, caller identity.Caller, req auth.TokenCreateRequest) (auth.TokenCreated, error) {
	if err := tokenManager(caller); err != nil {
		return auth.TokenCreated{}, err
	}
	// Whoever registered an address they do not own must get no credential that outlives
	// its verification by the owner.
	if caller.EmailUnverified {
		return auth.TokenCreated{}, errs.Forbidden(link.MsgVerifyEmail)
	}
	tr, err := ValidateTokenRequest(req)
	if err != nil {
		return auth.TokenCreated{}, err
	}
	secret, hash, err := NewTokenSecret()
	if err != nil {
		return auth.TokenCreated{}, err
	}
	now := s.now().UTC()
	t := APIToken{ID: newID(), Hash: hash, UserID: caller.UserID, Name: tr.Name, Scopes: tr.Scopes,
		Prefix: secret[:tokenPrefixLength], CreatedAt: now, ExpiresAt: now.AddDate(0, 0, tr.Days)}
	for range tokenInsertAttempts {
		slot, expiredHeld, err := s.freeSlot(ctx, caller.UserID, now)
		if err != nil {
			return auth.TokenCreated{}, err
		}
		if expiredHeld {
			if err := s.tokens.DeleteExpiredTokens(ctx, caller.UserID, now); err != nil {
				return auth.TokenCreated{}, err
			}
		}
		t.Slot = slot
		switch err := s.tokens.InsertToken(ctx, t); {
		case err == nil:
			return auth.TokenCreated{Token: t.View(), Secret: secret}, nil
		case !errors.Is(err, ErrSlotTaken):
			return auth.TokenCreated{}, err
		}
		// A concurrent creation took the slot: look again.
	}
	return auth.TokenCreated{}, errs.E(errs.KindConflict, "too many concurrent token creations; try again")
}

// freeSlot returns a slot no live token of userID holds, picked at random among the free
// ones so that racing creations seldom pick the same, and whether an expired token still
// holds it; a 409 when every slot is live.
func (s *Service) freeSlot(ctx context.Context, userID string, now time.Time) (int, bool, error) {
	all, err := s.tokens.TokensOf(ctx, userID)
	if err != nil {
		return 0, false, err
	}
	held := map[int]bool{} // slot → held by a live token
	for _, t := range all {
		held[t.Slot] = held[t.Slot] || now.Before(t.ExpiresAt)
	}
	var free []int
	for slot := range MaxLiveTokens {
		if live, taken := held[slot]; !taken || !live {
			free = append(free, slot)
		}
	}
	if len(free) == 0 {
		return 0, false, errs.E(errs.KindConflict, msgTooManyTokens)
	}
	slot := free[mrand.IntN(len(free))]
	_, expiredHeld := held[slot]
	return slot, expiredHeld, nil
}

// Tokens lists caller's live tokens, newest first.
func (s *Service) Tokens(ctx context.Context, caller identity.Caller) (auth.TokenList, error) {
	if err := tokenManager(caller); err != nil {
		return auth.TokenList{}, err
	}
	all, err := s.tokens.TokensOf(ctx, caller.UserID)
	if err != nil {
		return auth.TokenList{}, err
	}
	now := s.now()
	out := auth.TokenList{Tokens: []auth.Token{}}
	for _, t := range all {
		if now.Before(t.ExpiresAt) {
			out.Tokens = append(out.Tokens, t.View())
		}
	}
	return out, nil
}

// RevokeToken deletes caller's token id at once: the next request with it is a 401 on this
// replica, and on every other within tokenTTL (half a second), the longest a replica reuses
// a token it read. Another owner's or an unknown id is a 404.
func (s *Service) RevokeToken(ctx context.Context, caller identity.Caller, id string) error {
	if err := tokenManager(caller); err != nil {
		return err
	}
	ok, err := s.tokens.DeleteToken(ctx, caller.UserID, id)
	if err != nil {
		return err
	}
	if !ok {
		return errs.NotFound("API token not found")
	}
	s.tokenMu.Lock()
	for hash, c := range s.tokenCache {
		if c.t.ID == id {
			delete(s.tokenCache, hash)
		}
	}
	s.tokenMu.Unlock()
	return nil
}

// ValidateToken answers a request made with secret: the token (read at most tokenTTL ago,
// so a revocation counts within half a second everywhere), its owner as of now (read fresh,
// so a ban counts on the very next request), and its request window after this
// request took a unit. The owner's read and the unit are taken at once, so the window costs
// no extra wait. An unknown, expired or revoked token, or one whose owner is gone, is a 401;
// a failure of the quota service a 503 (the window is never skipped).
func (s *Service) ValidateToken(ctx context.Context, secret string) (auth.TokenAuth, error) {
	if !auth.PlausibleTokenSecret(secret) {
		return auth.TokenAuth{}, errs.E(errs.KindUnauthenticated, msgTokenInvalid)
	}
	now := s.now()
	t, err := s.tokenByHash(ctx, HashToken(secret), now)
	if errors.Is(err, ErrTokenNotFound) {
		return auth.TokenAuth{}, errs.E(errs.KindUnauthenticated, msgTokenInvalid)
	}
	if err != nil {
		return auth.TokenAuth{}, err
	}
	if !now.Before(t.ExpiresAt) {
		return auth.TokenAuth{}, errs.E(errs.KindUnauthenticated, msgTokenInvalid)
	}
	var (
		wg      sync.WaitGroup
		res     quota.Reservation
		qerr    error
		u       User
		userErr error
	)
	wg.Go(func() {
		res, qerr = s.quota.Reserve(ctx, quota.ReserveRequest{Scope: quota.ScopeAPIToken, Key: t.ID})
	})
	u, userErr = s.store.UserByID(ctx, t.UserID)
	wg.Wait()
	if errors.Is(userErr, ErrUserNotFound) {
		return auth.TokenAuth{}, errs.E(errs.KindUnauthenticated, msgTokenInvalid)
	}
	if userErr != nil {
		return auth.TokenAuth{}, userErr
	}
	if qerr != nil {
		if e, ok := errs.As(qerr); ok && e.Kind == errs.KindUnavailable {
			return auth.TokenAuth{}, qerr
		}
		return auth.TokenAuth{}, errs.Unavailable("quota service unavailable", qerr)
	}
	s.touch(ctx, t, now)
	out := auth.TokenAuth{User: u.View(now), TokenID: t.ID, Scopes: t.Scopes, Allowed: res.Allowed,
		Rate: ratelimit.Window{Name: "token", Limit: res.Limit, WindowSeconds: res.WindowSeconds, Remaining: res.Remaining,
			ResetSeconds: secondsUntil(res.ResetsAt, now)}}
	if !res.Allowed {
		out.RetryAfterSeconds = max(res.RetryAfterSeconds, 1)
	}
	return out, nil
}

// tokenTTL is how long a replica reuses a token it read: a revocation reaches every
// replica within it (the contract allows a second). A token busy enough to be read again
// within it costs its requests no read of the token.
const tokenTTL = 500 * time.Millisecond

// maxCachedTokens bounds the tokens a replica keeps; reaching it starts afresh.
const maxCachedTokens = 1 << 14

type cachedToken struct {
	t     APIToken
	until time.Time
}

// tokenByHash returns the live token with hash, from this replica's memory if it read it
// less than tokenTTL ago. Unknown tokens are never kept, so made-up secrets cannot fill it.
func (s *Service) tokenByHash(ctx context.Context, hash string, now time.Time) (APIToken, error) {
	mono := time.Now()
	s.tokenMu.Lock()
	c, ok := s.tokenCache[hash]
	s.tokenMu.Unlock()
	if ok && mono.Before(c.until) {
		return c.t, nil
	}
	t, err := s.tokens.TokenByHash(ctx, hash, now)
	if err != nil {
		return APIToken{}, err
	}
	s.tokenMu.Lock()
	if s.tokenCache == nil || len(s.tokenCache) >= maxCachedTokens {
		s.tokenCache = make(map[string]cachedToken)
	}
	s.tokenCache[hash] = cachedToken{t: t, until: mono.Add(tokenTTL)}
	s.tokenMu.Unlock()
	return t, nil
}

// secondsUntil is the whole seconds from now to at, rounded up; 0 for a zero or past at.
func secondsUntil(at, now time.Time) int {
	if at.IsZero() || !at.After(now) {
		return 0
	}
	return int(math.Ceil(at.Sub(now).Seconds()))
}

// touch records that t was used at now, at most once a minute per token and replica (the
// store's condition makes it once a minute over all replicas), in the background: the
// request does not wait for it, and last_used_at may lag by up to a minute.
func (s *Service) touch(ctx context.Context, t APIToken, now time.Time) {
	s.touchOnce(ctx, "token:"+t.ID, t.LastUsedAt, now, func(ctx context.Context) error {
		return s.tokens.TouchToken(ctx, t.ID, now.UTC(), lastUsedGranularity)
	})
}

// touchOnce runs write (recording that what key names was used at now) in the background,
// at most once a lastUsedGranularity per key and replica, and not when last (the use the
// store holds) is that recent already. A failure is logged: it only delays the record.
func (s *Service) touchOnce(ctx context.Context, key string, last *time.Time, now time.Time, write func(context.Context) error) {
	if last != nil && now.Sub(*last) < lastUsedGranularity {
		return
	}
	s.touchMu.Lock()
	prev, ok := s.touched[key]
	if ok && now.Sub(prev) < lastUsedGranularity {
		s.touchMu.Unlock()
		return
	}
	if s.touched == nil || len(s.touched) >= maxTouched {
		s.touched = make(map[string]time.Time) // forgetting costs one extra write per key
	}
	s.touched[key] = now
	s.touchMu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tokenTouchBudget)
		defer cancel()
		if err := write(ctx); err != nil {
			s.log.WarnContext(ctx, "record the last use", "of", key[:strings.IndexByte(key, ':')], "err", err)
		}
	}()
}
