// Package accounts holds the rules of accounts and sessions: registration, password and
// identity-provider login with brute-force limits, session validation, roles, the
// moderation of accounts (list, timeout, ban, unban), the bootstrap super admin and the
// login audit trail. Storage, the quota service, the identity provider, the audit log and
// the link service sit behind the interfaces declared here.
package accounts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
	"github.com/linkmesh/linkmesh/services/auth/internal/mail"
)

// DefaultQuotaLimit is a new account's quota_limit.
const DefaultQuotaLimit = 100

// Restriction names the status fields of an account to set; empty and nil ones stay. It is
// the end-to-end tests' way to restrict an account directly (see authtest); the moderation
// actions write a whole Standing instead.
type Restriction struct {
	Status        string
	BanReason     *string
	TimeoutUntil  *time.Time
	TimeoutReason *string
	// QuotaLimit, when set, replaces the account's creations per quota window.
	QuotaLimit *int
}

// Standing is the part of an account that moderation changes: the stored status and the
// reason of a ban, the end and reason of a timeout. A moderation action writes a whole
// Standing over the one it read, so that undoing it restores exactly what was there,
// absent fields included.
type Standing struct {
	Status        string
	BanReason     *string
	TimeoutUntil  *time.Time
	TimeoutReason *string
}

// User is a stored account.
type User struct {
	ID        string
	Email     string // trimmed, lower-cased
	FirstName string
	LastName  string
	// PasswordHash is an argon2id PHC string; empty for accounts without a password.
	PasswordHash string
	AuthProvider string
	// IDPUID is the identity provider's subject once the account is linked.
	IDPUID string
	Role   string
	// Status is the stored status: active or banned. Suspension is derived from TimeoutUntil.
	Status        string
	TimeoutUntil  *time.Time
	TimeoutReason *string
	BanReason     *string
	QuotaLimit    int
	CreatedAt     time.Time
	UpdatedAt     time.Time
	LastLoginAt   *time.Time
	// SessionEpoch is raised when all of the account's sessions must end at once (linking
	// it to an identity provider): a session is valid only while its Epoch equals it.
	SessionEpoch int64
	// EmailUnverified marks a password account whose address is not verified yet: it may
	// sign in, but not create links.
	EmailUnverified bool
}

// Session is a stored session. The token itself is never stored, only its hash.
type Session struct {
	Hash      string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
	// Epoch is the account's SessionEpoch as read by the login that issued the session. A
	// login racing a revocation stores the old epoch, so its session is dead on arrival
	// even if it was written after the revocation deleted the others.
	Epoch int64
	// UserAgent is the User-Agent of the login that made the session (at most
	// identity.MaxUserAgent bytes); LastSeenAt when it was last used, to the minute.
	UserAgent  string
	LastSeenAt *time.Time
}

// ID is the session's public id: derived from the hash of its token (which is never shown),
// so listing sessions reveals nothing that could be used as one.
func (s Session) ID() string {
	sum := sha256.Sum256([]byte("session-id\x00" + s.Hash))
	return hex.EncodeToString(sum[:12])
}

// Login methods of login records.
const (
	MethodPassword = "password"
	MethodGoogle   = "google"
)

// LoginRecord is one login attempt.
type LoginRecord struct {
	ID        string
	UserID    string // empty when no account was found
	Email     string
	Success   bool
	Method    string
	Reason    string // why it failed; empty on success
	IPHash    string
	UserAgent string
	CreatedAt time.Time
}

// RecordFilter selects login records; zero fields do not filter.
type RecordFilter struct {
	UserID  string
	Email   string
	Success *bool
}

// UserFilter selects accounts for the admin list and counts; zero fields do not filter.
type UserFilter struct {
	// Contains is a literal substring of the e-mail, first or last name, in any letter case.
	Contains string
	Role     string
	// Status is a public status (active, suspended, banned), as derived at Now.
	Status string
	Now    time.Time
}

// Errors stores return.
var (
	ErrEmailTaken      = errors.New("email taken")
	ErrUserNotFound    = errors.New("user not found")
	ErrSessionNotFound = errors.New("session not found")
	ErrResetInvalid    = errors.New("password reset invalid, used or expired")
	// ErrVerificationInvalid is a verification token unknown, used or expired.
	ErrVerificationInvalid = errors.New("e-mail verification invalid, used or expired")
)

// Store persists accounts; implemented by internal/store.
type Store interface {
	// InsertUser stores u; ErrEmailTaken when the e-mail exists (the unique index decides).
	InsertUser(ctx context.Context, u User) error
	UserByID(ctx context.Context, id string) (User, error)
	UserByEmail(ctx context.Context, email string) (User, error)
	UserByIDPUID(ctx context.Context, sub string) (User, error)
	// LinkIDP links an account that has no idp_uid to sub, in one conditional update: it
	// sets idp_uid, makes auth_provider google, removes the password hash and raises the
	// session epoch. False if the account already had an idp_uid, or another account has sub.
	LinkIDP(ctx context.Context, userID, sub string, now time.Time) (bool, error)
	SetLastLogin(ctx context.Context, userID string, at time.Time) error
	// SetPasswordHash replaces the password hash only if it is still old; false when it was
	// not (changed or removed meanwhile).
	SetPasswordHash(ctx context.Context, userID, old, hash string, now time.Time) (bool, error)
	// ReplacePassword sets the password hash and raises the session epoch in one update, if
	// the hash is still old (any hash when old is empty); the account as written, or false.
	ReplacePassword(ctx context.Context, userID, old, hash string, now time.Time) (User, bool, error)
	// SetRole changes the role only if it is still from; false when it was not.
	SetRole(ctx context.Context, userID, from, to string, now time.Time) (bool, error)
	// SetStanding replaces the account's standing only if it is still from, and stamps
	// updated_at with at; false when it was not (changed meanwhile, or no such account).
	SetStanding(ctx context.Context, userID string, from, to Standing, at time.Time) (bool, error)
	// Users returns one page of the accounts matching f, newest first, and their total.
	Users(ctx context.Context, f UserFilter, skip, limit int64) ([]User, int64, error)
	CountUsers(ctx context.Context, f UserFilter) (int64, error)

	InsertSession(ctx context.Context, s Session) error
	// SessionByHash returns the session if it exists and has not expired at now.
	SessionByHash(ctx context.Context, hash string, now time.Time) (Session, error)
	DeleteSession(ctx context.Context, hash string) error
	// DeleteSessionsByUser revokes every session of the account and says how many.
	DeleteSessionsByUser(ctx context.Context, userID string) (int64, error)
	// SessionsOf returns the account's sessions live at now, newest first.
	SessionsOf(ctx context.Context, userID string, now time.Time) ([]Session, error)
	// DeleteSessions revokes the account's sessions with these hashes and says how many.
	DeleteSessions(ctx context.Context, userID string, hashes []string) (int64, error)
	// TouchSession sets last_seen_at to at unless it is already later than at minus
	// granularity.
	TouchSession(ctx context.Context, hash string, at time.Time, granularity time.Duration) error

	// InsertReset keeps a password-reset token's hash for userID until expires; TakeReset
	// removes a valid one and says whose it was (ErrResetInvalid otherwise); DeleteResetsOf
	// removes every one of userID.
	InsertReset(ctx context.Context, hash, userID string, now, expires time.Time) error
	TakeReset(ctx context.Context, hash string, now time.Time) (string, error)
	DeleteResetsOf(ctx context.Context, userID string) error

	// InsertVerification keeps an e-mail verification token's hash for userID and email
	// until expires; TakeVerification removes a valid one and says whose and for which
	// address it was (ErrVerificationInvalid otherwise).
	InsertVerification(ctx context.Context, hash, userID, email string, now, expires time.Time) error
	TakeVerification(ctx context.Context, hash string, now time.Time) (userID, email string, err error)
	// ForgetAccount removes what the account leaves besides its document, for good: its
	// API tokens, sessions, reset and verification links; and makes its login records keep
	// only the keyed hash of the address they came from (no e-mail, no User-Agent).
	ForgetAccount(ctx context.Context, userID, email string) error
	// DeleteUser deletes the account's document; deleting a missing one is no error.
	DeleteUser(ctx context.Context, userID string) error
	// MarkVerified marks the account verified if it still has email, ending every session of
	// it (the session epoch rises); false if not.
	MarkVerified(ctx context.Context, userID, email string, now time.Time) (bool, error)
	// DeleteUnverified deletes the account if it is still unverified and was created
	// before; false if not.
	DeleteUnverified(ctx context.Context, userID string, createdBefore time.Time) (bool, error)

	InsertLoginRecord(ctx context.Context, r LoginRecord) error
	// LoginRecords returns one page of matching records, newest first, and the total.
	LoginRecords(ctx context.Context, f RecordFilter, skip, limit int64) ([]LoginRecord, int64, error)
}

// Mailer keeps a mail for sending, under an id that names it for good; implemented by
// *mail.Outbox.
type Mailer interface {
	Enqueue(ctx context.Context, id string, m mail.Message) error
	// Forget drops the mail not yet sent to an address (its account is gone).
	Forget(ctx context.Context, to string) error
}

// Quota is the quota service's typed client (pkg/clients/quota).
type Quota interface {
	Reserve(ctx context.Context, req quota.ReserveRequest) (quota.Reservation, error)
	Release(ctx context.Context, req quota.ReleaseRequest) error
}

// AuditLog writes the audit log that all admin actions share; implemented by the
// moderation service's typed client (pkg/clients/moderation). The actor, IP hash and
// User-Agent travel in the identity token of the context, never in the record.
type AuditLog interface {
	Audit(ctx context.Context, rec moderation.AuditRecord) error
	// Forget keeps of the caller only what the audit trail needs (their account is going).
	Forget(ctx context.Context) error
}

// Links acts on the links of an account; implemented by the link service's typed client
// (pkg/clients/link).
type Links interface {
	// DisableOwner disables the owner's enabled links and says how many it switched off.
	DisableOwner(ctx context.Context, ownerID string, req link.DisableRequest) (int64, error)
	// Export returns the caller's live links with their analytics (the caller travels in
	// ctx's internal token).
	Export(ctx context.Context) (link.Export, error)
	// DeleteAll deletes the caller's links for good, and their webhooks.
	DeleteAll(ctx context.Context) error
}

// PasswordHasher hashes and checks passwords; implemented by *password.Hasher.
type PasswordHasher interface {
	Hash(ctx context.Context, pw string) (string, error)
	// Check reports whether pw matches encoded and whether encoded should be replaced by a
	// fresh Hash of pw.
	Check(ctx context.Context, pw, encoded string) (ok, rehash bool, err error)
}

// IdentityVerifier verifies identity provider ID tokens; implemented by internal/idp.
type IdentityVerifier interface {
	Enabled() bool
	Verify(ctx context.Context, raw string) (idp.Identity, error)
}

// Standing is u's current standing.
func (u User) Standing() Standing {
	return Standing{Status: u.Status, BanReason: u.BanReason, TimeoutUntil: u.TimeoutUntil, TimeoutReason: u.TimeoutReason}
}

// withStanding is u with st written over its standing.
func (u User) withStanding(st Standing) User {
	u.Status, u.BanReason, u.TimeoutUntil, u.TimeoutReason = st.Status, st.BanReason, st.TimeoutUntil, st.TimeoutReason
	return u
}

// View is the public form of u at now: no password hash, no idp_uid, derived status.
func (u User) View(now time.Time) auth.User {
	return auth.User{
		ID: u.ID, Email: u.Email, EmailVerified: !u.EmailUnverified, FirstName: u.FirstName, LastName: u.LastName, Role: u.Role,
		Status: u.StatusAt(now), AuthProvider: u.AuthProvider, QuotaLimit: u.QuotaLimit,
		CreatedAt: u.CreatedAt.UTC(), UpdatedAt: u.UpdatedAt.UTC(), LastLoginAt: utc(u.LastLoginAt),
		TimeoutUntil: utc(u.TimeoutUntil), TimeoutReason: u.TimeoutReason, BanReason: u.BanReason,
	}
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}
