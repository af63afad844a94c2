package accounts

import (
	"context"
	"errors"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// Reasons of login records: why an attempt failed, or how a successful one came about when
// it was not a plain login.
const (
	ReasonRegistered       = "registered"
	ReasonUnknownEmail     = "unknown_email"
	ReasonNoPassword       = "no_password"
	ReasonWrongPassword    = "wrong_password"
	ReasonBanned           = "banned"
	ReasonSuspended        = "suspended"
	ReasonRateLimited      = "rate_limited"
	ReasonCaptchaRequired  = "captcha_required"
	ReasonUnavailable      = "unavailable"
	ReasonError            = "error"
	ReasonInvalidToken     = "invalid_token"
	ReasonEmailNotVerified = "email_not_verified"
	ReasonIDPNotConfigured = "idp_not_configured"
	ReasonIdentityConflict = "identity_conflict"
	// ReasonLinked marks the successful identity provider login that linked an existing
	// account (and so removed its password and ended its other sessions).
	ReasonLinked = "linked"
)

func badCredentials() error { return errs.E(errs.KindUnauthenticated, "invalid email or password") }

// Login checks e-mail and password and issues a fresh session. Failures from a wrong e-mail
// or a wrong password are indistinguishable in message and (through the dummy hash) in
// timing. Each attempt first takes one unit of the failure window of its pair of e-mail and
// client and one of the e-mail's ceiling over all clients (see reserveLogin); a successful
// login gives both back, so only failures stay counted.
func (s *Service) Login(ctx context.Context, caller identity.Caller, req auth.LoginRequest) (auth.Session, error) {
	creds, err := ValidateLogin(req)
	if err != nil {
		return auth.Session{}, err
	}
	rec := s.newRecord(caller, MethodPassword, creds.Email)
	units, err := s.reserveLogin(ctx, creds.Email, caller, req.Captcha)
	if err != nil {
		return auth.Session{}, s.fail(ctx, rec, failureReason(err), err)
	}
	sess, reason, err := s.checkPassword(ctx, creds, &rec)
	switch {
	case err == nil:
		s.releaseLogin(ctx, units)
		return sess, nil
	case reason == ReasonError:
		// Our own failure is not the caller's: give the units back.
		s.releaseLogin(ctx, units)
	}
	return auth.Session{}, s.fail(ctx, rec, reason, err)
}

// checkPassword finds the account and verifies the password; on success it records the
// login and starts the session. It returns the failure reason with the error.
func (s *Service) checkPassword(ctx context.Context, creds Credentials, rec *LoginRecord) (auth.Session, string, error) {
	u, err := s.store.UserByEmail(ctx, creds.Email)
	switch {
	case errors.Is(err, ErrUserNotFound):
		s.burnDummy(ctx, creds.Password)
		return auth.Session{}, ReasonUnknownEmail, badCredentials()
	case err != nil:
		return auth.Session{}, ReasonError, err
	}
	rec.UserID = u.ID
	if u.PasswordHash == "" {
		s.burnDummy(ctx, creds.Password)
		return auth.Session{}, ReasonNoPassword, badCredentials()
	}
	ok, rehash, err := s.hasher.Check(ctx, creds.Password, u.PasswordHash)
	if err != nil {
		return auth.Session{}, ReasonError, err
	}
	if !ok {
		return auth.Session{}, ReasonWrongPassword, badCredentials()
	}
	if reason, err := u.loginBlocked(s.now()); err != nil {
		return auth.Session{}, reason, err
	}
	if rehash {
		s.rehash(ctx, u, creds.Password)
	}
	sess, err := s.succeed(ctx, u, *rec)
	if err != nil {
		return auth.Session{}, ReasonError, err
	}
	return sess, "", nil
}

// burnDummy spends the time of a real verification, so unknown e-mails answer no faster.
func (s *Service) burnDummy(ctx context.Context, pw string) {
	_, _, _ = s.hasher.Check(ctx, pw, s.dummyHash)
}

// rehash stores the password at the current cost (or in NFC); a failure only delays the
// upgrade. It replaces only the hash it verified: had linking removed the password in the
// meantime, an unconditional write would bring it back.
func (s *Service) rehash(ctx context.Context, u User, pw string) {
	hash, err := s.hasher.Hash(ctx, pw)
	if err != nil {
		s.log.WarnContext(ctx, "rehash password failed", "user_id", u.ID, "err", err)
		return
	}
	replaced, err := s.store.SetPasswordHash(ctx, u.ID, u.PasswordHash, hash, s.now().UTC())
	switch {
	case err != nil:
		s.log.WarnContext(ctx, "rehash password failed", "user_id", u.ID, "err", err)
	case !replaced:
		s.log.InfoContext(ctx, "password hash changed meanwhile; rehash skipped", "user_id", u.ID)
	}
}

// succeed stamps last_login_at and issues a new session with its success record (see issue).
// A failure of any step leaves no success record, so fail can record the attempt once.
func (s *Service) succeed(ctx context.Context, u User, rec LoginRecord) (auth.Session, error) {
	now := s.now().UTC()
	if err := s.store.SetLastLogin(ctx, u.ID, now); err != nil {
		return auth.Session{}, err
	}
	u.LastLoginAt = &now
	return s.issue(ctx, u, rec, now)
}

// fail writes the failure record and returns err. A record that cannot be written is logged:
// the caller's answer stays the same. The record gets its own ID: a success record whose
// write timed out may exist under another.
func (s *Service) fail(ctx context.Context, rec LoginRecord, reason string, err error) error {
	rec.ID, rec.Success, rec.Reason, rec.CreatedAt = newID(), false, reason, s.now().UTC()
	result := "failure"
	if reason == ReasonRateLimited {
		result = "limited"
	}
	s.countAttempt(rec.Method, result)
	if werr := s.store.InsertLoginRecord(context.WithoutCancel(ctx), rec); werr != nil {
		s.log.ErrorContext(ctx, "write login record failed", "reason", reason, "err", werr)
	}
	return err
}

// failureReason classifies an error for the login record.
func failureReason(err error) string {
	e, _ := errs.As(err)
	switch {
	case errs.IsKind(err, errs.KindTooMany):
		return ReasonRateLimited
	case e != nil && e.Kind == errs.KindInvalid && e.Message == auth.MsgCaptchaRequired:
		return ReasonCaptchaRequired
	case errs.IsKind(err, errs.KindUnavailable):
		return ReasonUnavailable
	}
	return ReasonError
}

// newRecord starts the login record of an attempt; its ID is given when it is written.
func (s *Service) newRecord(caller identity.Caller, method, email string) LoginRecord {
	return LoginRecord{Email: truncate(email, MaxEmailLength), Method: method,
		IPHash: ipHash(caller), UserAgent: caller.UserAgent}
}

// truncate cuts s to at most n runes; attempted e-mails are attacker-chosen and unbounded.
func truncate(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
