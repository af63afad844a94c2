package accounts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
)

// Options are what a Service is built from.
type Options struct {
	Store Store
	// Tokens keeps the API tokens.
	Tokens TokenStore
	Quota  Quota
	IDP    IdentityVerifier
	Hasher PasswordHasher
	// Audit records every admin action; an action whose entry cannot be written is undone.
	Audit AuditLog
	// Links disables a banned user's links when the ban asks for it.
	Links Links
	// Mail keeps the mail the rules send (password resets) for sending.
	Mail Mailer
	// BaseURL is the public base the links in mail open (LINKMESH_BASE_URL).
	BaseURL string
	// RequireVerification makes new password accounts unverified until their owner opens
	// the mailed link (LINKMESH_EMAIL_VERIFICATION=required).
	RequireVerification bool
	// SessionTTL is how long a session lives.
	SessionTTL time.Duration
	// Issuer, ClientID and AuthorizationURL are the identity provider's public settings for
	// IDPConfig.
	Issuer           string
	ClientID         string
	AuthorizationURL string
	// Attempts, when set, counts login attempts by method (password, oidc) and result
	// (success, failure, limited).
	Attempts *prometheus.CounterVec
	// Now is the clock; time.Now when nil.
	Now    func() time.Time
	Logger *slog.Logger
}

// Service applies the account rules.
type Service struct {
	store  Store
	tokens TokenStore
	// touched is when this replica last recorded each token's or session's use, by key.
	touchMu sync.Mutex
	touched map[string]time.Time
	// tokenCache holds the tokens this replica read in the last tokenTTL, by hash.
	tokenMu    sync.Mutex
	tokenCache map[string]cachedToken
	quota      Quota
	idp        IdentityVerifier
	hasher     PasswordHasher
	audit      AuditLog
	links      Links
	mail       Mailer
	baseURL    string
	verify     bool
	ttl        time.Duration
	issuer     string
	clientID   string
	authURL    string
	now        func() time.Time
	log        *slog.Logger
	dummyHash  string
	attempts   *prometheus.CounterVec
}

// New builds a Service. It hashes a random password once, so that logins of unknown e-mails
// verify against a real hash at the real cost.
func New(ctx context.Context, opts Options) (*Service, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// Without them an admin action could not be recorded (and so could never stand) or
	// would panic halfway: refuse to start instead.
	if opts.Audit == nil || opts.Links == nil || opts.Mail == nil {
		return nil, errors.New("accounts: an audit log, a link client and a mail outbox are required")
	}
	token, _, err := NewSessionToken()
	if err != nil {
		return nil, err
	}
	dummy, err := opts.Hasher.Hash(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("hash dummy password: %w", err)
	}
	return &Service{store: opts.Store, tokens: opts.Tokens, quota: opts.Quota, idp: opts.IDP, hasher: opts.Hasher,
		audit: opts.Audit, links: opts.Links, mail: opts.Mail, baseURL: strings.TrimRight(opts.BaseURL, "/"), verify: opts.RequireVerification, ttl: opts.SessionTTL, issuer: opts.Issuer, clientID: opts.ClientID, authURL: authorizationURL(opts.Issuer, opts.AuthorizationURL), now: millis(opts.Now),
		log: opts.Logger, dummyHash: dummy, attempts: opts.Attempts}, nil
}

func newID() string { return bson.NewObjectID().Hex() }

// msgTooManyRegistrations answers a registration over its client's window.
const msgTooManyRegistrations = "too many registrations from this client"

// Register creates an e-mail account and logs it in. Being logged in, the registration is
// also the account's first login record. Each attempt that passes validation takes a unit
// of its client's registration window (a 429 beyond it), kept whatever the answer but our
// own failure: a taken e-mail counts too, so the window also bounds probing for accounts.
// The retry of a registration that succeeded (same Idempotency-Key) takes none.
func (s *Service) Register(ctx context.Context, caller identity.Caller, req auth.RegisterRequest) (auth.Session, error) {
	reg, err := ValidateRegistration(req)
	if err != nil {
		return auth.Session{}, err
	}
	id := newID()
	if req.IdempotencyKey != "" {
		if err := server.CheckIdempotencyKey(req.IdempotencyKey); err != nil {
			return auth.Session{}, err
		}
		id = registrationID(req.IdempotencyKey)
		if sess, found, err := s.replayRegistration(ctx, caller, id, reg); found || err != nil {
			return sess, err
		}
	}
	unit, err := quota.Take(ctx, s.quota, quota.ReserveRequest{Scope: quota.ScopeRegister, Key: clientKey(caller)}, msgTooManyRegistrations)
	if err != nil {
		return auth.Session{}, err
	}
	sess, replayed, err := s.register(ctx, caller, req, reg, id)
	if replayed || err != nil && !errs.IsClientError(err) {
		s.release(ctx, unit)
	}
	return sess, err
}

// register is Register past its window; replayed says the answer is a concurrent attempt's
// account (the same Idempotency-Key), so this one registered nothing.
func (s *Service) register(ctx context.Context, caller identity.Caller, req auth.RegisterRequest, reg Registration, id string) (sess auth.Session, replayed bool, err error) {
	// A hash costs tens of milliseconds and MiBs of memory: a taken e-mail is answered without
	// one, so repeating a known address is cheap to refuse. The unique index still decides
	// between registrations racing past this check.
	switch held, err := s.store.UserByEmail(ctx, reg.Email); {
	case err == nil && req.IdempotencyKey != "" && held.ID == id:
		// A concurrent attempt with the same key stored it since the first look.
		if sess, found, err := s.replayRegistration(ctx, caller, id, reg); found || err != nil {
			return sess, found, err
		}
		return auth.Session{}, false, emailTaken()
	case err == nil && held.EmailUnverified:
		if sess, answered, err := s.unverifiedHolder(ctx, held, reg, id); answered || err != nil {
			return sess, false, err
		}
	case err == nil:
		return auth.Session{}, false, emailTaken()
	case !errors.Is(err, ErrUserNotFound):
		return auth.Session{}, false, err
	}
	hash, err := s.hasher.Hash(ctx, reg.Password)
	if err != nil {
		return auth.Session{}, false, err
	}
	now := s.now().UTC()
	u := User{ID: id, Email: reg.Email, FirstName: reg.FirstName, LastName: reg.LastName,
		PasswordHash: hash, AuthProvider: auth.ProviderEmail, Role: auth.RoleUser, Status: auth.StatusActive,
		QuotaLimit: DefaultQuotaLimit, CreatedAt: now, UpdatedAt: now, LastLoginAt: &now, EmailUnverified: s.verify}
	if err := s.store.InsertUser(ctx, u); err != nil {
		if errors.Is(err, ErrEmailTaken) && req.IdempotencyKey != "" {
			// A concurrent attempt with the same key may have stored it: answer as a retry.
			if sess, found, err := s.replayRegistration(ctx, caller, id, reg); found || err != nil {
				return sess, found, err
			}
		}
		if errors.Is(err, ErrEmailTaken) {
			return auth.Session{}, false, emailTaken()
		}
		return auth.Session{}, false, err
	}
	if u.EmailUnverified {
		// The account stands without the mail: its owner can ask for it again.
		if err := s.sendVerification(ctx, u); err != nil {
			s.log.WarnContext(ctx, "mail the verification of a new account", "user_id", u.ID, "err", err)
		}
	}
	rec := s.newRecord(caller, MethodPassword, u.Email)
	rec.Reason = ReasonRegistered
	sess, err = s.issue(ctx, u, rec, now)
	return sess, false, err
}

// registrationID is the ID of the account registered under an Idempotency-Key. Keys of
// registrations are global: the body carries the password, and only its owner can replay it.
func registrationID(key string) string {
	sum := sha256.Sum256([]byte("register\x00" + key))
	return hex.EncodeToString(sum[:12])
}

// replayRegistration answers a registration whose key already created an account: for the
// same e-mail, names and password (verified against the stored hash, never kept elsewhere)
// a fresh session of that account, as the first answer would have been; for anything else
// 422. found is false when the key created nothing yet.
func (s *Service) replayRegistration(ctx context.Context, caller identity.Caller, id string, reg Registration) (auth.Session, bool, error) {
	u, err := s.store.UserByID(ctx, id)
	switch {
	case errors.Is(err, ErrUserNotFound):
		return auth.Session{}, false, nil
	case err != nil:
		return auth.Session{}, true, err
	}
	reused := errs.E(errs.KindUnprocessable, "Idempotency-Key was already used with a different request")
	if u.Email != reg.Email || u.FirstName != reg.FirstName || u.LastName != reg.LastName || u.PasswordHash == "" {
		return auth.Session{}, true, reused
	}
	ok, _, err := s.hasher.Check(ctx, reg.Password, u.PasswordHash)
	if err != nil {
		return auth.Session{}, true, err
	}
	if !ok {
		return auth.Session{}, true, reused
	}
	if _, err := u.loginBlocked(s.now()); err != nil {
		return auth.Session{}, true, err // banned or suspended since: as a login would be
	}
	rec := s.newRecord(caller, MethodPassword, u.Email)
	rec.Reason = ReasonRegistered
	sess, err := s.issue(ctx, u, rec, s.now().UTC())
	return sess, true, err
}

func emailTaken() error { return errs.E(errs.KindConflict, "email is already registered") }

// issue starts a fresh session for u (every login gets a new token: no session fixation)
// and writes rec as the login's success record. The record comes last and a session whose
// record cannot be written is deleted again, so no session exists that the audit trail
// lacks, and an attempt that fails here leaves no success record behind its failure record.
func (s *Service) issue(ctx context.Context, u User, rec LoginRecord, now time.Time) (auth.Session, error) {
	token, hash, err := NewSessionToken()
	if err != nil {
		return auth.Session{}, err
	}
	sess := Session{Hash: hash, UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(s.ttl), Epoch: u.SessionEpoch,
		UserAgent: rec.UserAgent}
	if err := s.store.InsertSession(ctx, sess); err != nil {
		return auth.Session{}, err
	}
	rec.ID, rec.UserID, rec.Success, rec.CreatedAt = newID(), u.ID, true, now
	if err := s.store.InsertLoginRecord(ctx, rec); err != nil {
		if derr := s.store.DeleteSession(context.WithoutCancel(ctx), hash); derr != nil {
			s.log.ErrorContext(ctx, "delete the session of an unrecorded login failed", "user_id", u.ID, "err", derr)
		}
		return auth.Session{}, err
	}
	if rec.Reason != ReasonRegistered && rec.Reason != ReasonPasswordChanged {
		s.countAttempt(rec.Method, "success")
	}
	return auth.Session{User: u.View(now), Token: token, ExpiresAt: sess.ExpiresAt}, nil
}

// countAttempt counts a login attempt's outcome; an ID-token login is an "oidc" one.
func (s *Service) countAttempt(method, result string) {
	if s.attempts == nil {
		return
	}
	if method == MethodGoogle {
		method = "oidc"
	}
	s.attempts.WithLabelValues(method, result).Inc()
}

func sessionInvalid() error { return errs.E(errs.KindUnauthenticated, "session expired or invalid") }

// Validate returns the user of a live session, read fresh so that a ban or a role change
// counts on the very next request, and the session's public id. The session's last_seen_at
// is recorded in the background, at most once a minute.
func (s *Service) Validate(ctx context.Context, token string) (auth.Validated, error) {
	if token == "" || len(token) > maxTokenLength {
		return auth.Validated{}, sessionInvalid()
	}
	now := s.now()
	sess, err := s.store.SessionByHash(ctx, HashToken(token), now)
	if errors.Is(err, ErrSessionNotFound) {
		return auth.Validated{}, sessionInvalid()
	}
	if err != nil {
		return auth.Validated{}, err
	}
	// The store filters on expiry too; checking here keeps the rule independent of it.
	if !now.Before(sess.ExpiresAt) {
		return auth.Validated{}, sessionInvalid()
	}
	u, err := s.store.UserByID(ctx, sess.UserID)
	if errors.Is(err, ErrUserNotFound) {
		return auth.Validated{}, sessionInvalid()
	}
	if err != nil {
		return auth.Validated{}, err
	}
	// A raised epoch ended every session issued before it (see User.SessionEpoch).
	if sess.Epoch != u.SessionEpoch {
		return auth.Validated{}, sessionInvalid()
	}
	s.touchOnce(ctx, "session:"+sess.Hash, sess.LastSeenAt, now, func(ctx context.Context) error {
		return s.store.TouchSession(ctx, sess.Hash, now.UTC(), lastUsedGranularity)
	})
	return auth.Validated{User: u.View(now), SessionID: sess.ID()}, nil
}

// Logout revokes the session at once; an unknown token is not an error.
func (s *Service) Logout(ctx context.Context, token string) error {
	if token == "" || len(token) > maxTokenLength {
		return nil
	}
	return s.store.DeleteSession(ctx, HashToken(token))
}

// IDPConfig is the identity provider's public client configuration.
func (s *Service) IDPConfig() auth.IDPConfig {
	cfg := auth.IDPConfig{Enabled: s.idp.Enabled(), Provider: auth.ProviderGoogle}
	if cfg.Enabled {
		cfg.ClientID, cfg.Issuer, cfg.AuthorizationEndpoint = s.clientID, s.issuer, s.authURL
	}
	return cfg
}

// googleIssuer and googleAuthorization are Google's, the one provider whose browser sign-in
// address is known without a setting.
const (
	googleIssuer        = "https://accounts.google.com"
	googleAuthorization = "https://accounts.google.com/o/oauth2/v2/auth"
)

// authorizationURL is where browsers sign in: the setting, else Google's for Google's issuer.
func authorizationURL(issuer, setting string) string {
	if setting != "" {
		return setting
	}
	if strings.TrimRight(issuer, "/") == googleIssuer {
		return googleAuthorization
	}
	return ""
}

// superAdmin checks that the caller is a super admin, both in the gateway's token and in the
// database right now, so a demotion or a ban counts even for a token signed before it.
func (s *Service) superAdmin(ctx context.Context, caller identity.Caller) (User, error) {
	return s.atLeast(ctx, caller, auth.RoleSuperAdmin, "super admin role required")
}

// moderator checks that the caller is a moderator or a super admin, in the token and in the
// database right now; the actor it returns carries the role the database gives it.
func (s *Service) moderator(ctx context.Context, caller identity.Caller) (User, error) {
	return s.atLeast(ctx, caller, auth.RoleModerator, msgModeratorRequired)
}

// atLeast checks that the caller holds role or a higher one, both in the gateway's token
// and in the database, and is neither banned nor suspended; a refusal is a 403 with msg.
func (s *Service) atLeast(ctx context.Context, caller identity.Caller, role, msg string) (User, error) {
	if auth.Rank(caller.Role) < auth.Rank(role) || caller.UserID == "" {
		return User{}, errs.Forbidden("%s", msg)
	}
	actor, err := s.store.UserByID(ctx, caller.UserID)
	if errors.Is(err, ErrUserNotFound) {
		return User{}, errs.Forbidden("%s", msg)
	}
	if err != nil {
		return User{}, err
	}
	if auth.Rank(actor.Role) < auth.Rank(role) {
		return User{}, errs.Forbidden("%s", msg)
	}
	if _, err := actor.loginBlocked(s.now()); err != nil {
		return User{}, err
	}
	return actor, nil
}

// millis truncates clock to the milliseconds MongoDB keeps, so an answer given from memory
// (register, login) shows the same times as one read back later (me).
func millis(clock func() time.Time) func() time.Time {
	return func() time.Time { return clock().UTC().Truncate(time.Millisecond) }
}
