package accounts

import (
	"context"
	"errors"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/services/auth/internal/mail"
)

// Reasons of the login records of password changes.
const (
	// ReasonPasswordChanged marks the session a password change issued.
	ReasonPasswordChanged = "password_changed"
	// ReasonWrongCurrentPassword marks a password change refused for its current password.
	ReasonWrongCurrentPassword = "wrong_current_password"
)

// ChangePassword replaces the caller's password, given the current one, and ends every
// session of the account: the hash and the session epoch change in one update (see
// Store.ReplacePassword), so no session issued before survives, whatever logins race it.
// The caller goes on with the fresh session it answers. A wrong current password is a 401
// that counts against the same failure windows as a login (so the change cannot be used to
// guess the password); an account without a password (signed in with its identity
// provider) is a 400.
func (s *Service) ChangePassword(ctx context.Context, caller identity.Caller, req auth.PasswordChangeRequest) (auth.Session, error) {
	if err := signedInSession(caller); err != nil {
		return auth.Session{}, err
	}
	if req.CurrentPassword == "" {
		return auth.Session{}, errs.Invalid("current_password is required")
	}
	if err := validateNewPassword(req.NewPassword); err != nil {
		return auth.Session{}, err
	}
	u, err := s.sessionUser(ctx, caller)
	if err != nil {
		return auth.Session{}, err
	}
	if u.PasswordHash == "" {
		return auth.Session{}, errs.Invalid("this account signs in with its identity provider and has no password")
	}
	if err := s.checkOwnPassword(ctx, caller, u, req.CurrentPassword, "current password is wrong"); err != nil {
		return auth.Session{}, err
	}
	rec := s.newRecord(caller, MethodPassword, u.Email)
	rec.UserID = u.ID
	hash, err := s.hasher.Hash(ctx, normalizePassword(req.NewPassword))
	if err != nil {
		return auth.Session{}, err
	}
	now := s.now().UTC()
	changed, replaced, err := s.store.ReplacePassword(ctx, u.ID, u.PasswordHash, hash, now)
	if err != nil {
		return auth.Session{}, err
	}
	if !replaced {
		return auth.Session{}, errs.E(errs.KindConflict, "the password was changed at the same time; try again")
	}
	s.endCredentials(ctx, u.ID)
	rec.Reason = ReasonPasswordChanged
	return s.issue(ctx, changed, rec, now)
}

// validateNewPassword is ValidatePassword naming the field new_password.
func validateNewPassword(pw string) error {
	err := ValidatePassword(pw)
	if e, ok := errs.As(err); ok {
		return errs.Invalid("new_%s", e.Message)
	}
	return err
}

// checkOwnPassword checks the password of the signed-in caller's own account u before a
// change only its owner may make (a password change, a deletion). A check counts like a
// login attempt: a wrong password takes a unit of the same failure windows (so these
// routes cannot be used to guess it) and writes a failure record, answered 401 wrongMsg;
// a right one gives the units back.
func (s *Service) checkOwnPassword(ctx context.Context, caller identity.Caller, u User, pw, wrongMsg string) error {
	rec := s.newRecord(caller, MethodPassword, u.Email)
	rec.UserID = u.ID
	units, err := s.reserveLogin(ctx, u.Email, caller, auth.CaptchaOff)
	if err != nil {
		return s.fail(ctx, rec, failureReason(err), err)
	}
	ok, _, err := s.hasher.Check(ctx, pw, u.PasswordHash)
	if err != nil {
		s.releaseLogin(ctx, units)
		return err
	}
	if !ok {
		return s.fail(ctx, rec, ReasonWrongCurrentPassword, errs.E(errs.KindUnauthenticated, "%s", wrongMsg))
	}
	s.releaseLogin(ctx, units)
	return nil
}

// resetTTL is how long a password-reset link works.
const resetTTL = 30 * time.Minute

// Refusals of the reset flow.
const (
	msgTooManyResets = "too many password reset requests"
	msgResetInvalid  = "reset link is invalid, used or expired"
)

// RequestPasswordReset mails a single-use reset link (30 minutes) to the address, if an
// account with a password has it. The answer is the same whether or not one does, so it
// tells nobody which addresses have accounts. Requests are counted per client and per
// address (a 429 beyond either), so nobody floods an inbox.
func (s *Service) RequestPasswordReset(ctx context.Context, caller identity.Caller, req auth.PasswordResetRequest) error {
	email, err := ValidateEmail(req.Email)
	if err != nil {
		return err
	}
	client, err := quota.Take(ctx, s.quota, quota.ReserveRequest{Scope: quota.ScopeResetClient, Key: clientKey(caller)}, msgTooManyResets)
	if err != nil {
		return err
	}
	if _, err := quota.Take(ctx, s.quota, quota.ReserveRequest{Scope: quota.ScopeResetEmail, Key: emailKey(email)}, msgTooManyResets); err != nil {
		s.release(ctx, client)
		return err
	}
	u, err := s.store.UserByEmail(ctx, email)
	switch {
	case errors.Is(err, ErrUserNotFound):
		return nil
	case err != nil:
		return err
	case u.PasswordHash == "":
		return nil // it signs in with its identity provider: nothing to reset
	}
	token, hash, err := NewSessionToken()
	if err != nil {
		return err
	}
	now := s.now().UTC()
	if err := s.store.InsertReset(ctx, hash, u.ID, now, now.Add(resetTTL)); err != nil {
		return err
	}
	return s.mail.Enqueue(ctx, "reset-"+hash[:32], mail.Message{To: u.Email, Subject: "Reset your linkmesh password",
		Text: "Someone asked to reset the password of the linkmesh account of this address, hopefully you.\n\n" +
			"To choose a new password, open this link within 30 minutes (it works once):\n\n" +
			s.baseURL + "/#/reset-password?token=" + token + "\n\n" +
			"If you did not ask for it, ignore this mail: your password stays as it is.\n"})
}

// ConfirmPasswordReset sets the password of the account a valid reset token was mailed for
// and ends every session of it. The token is used up by the first confirmation; an unknown,
// used or expired one (or one of an account that no longer has a password) is a 400.
func (s *Service) ConfirmPasswordReset(ctx context.Context, req auth.PasswordResetConfirm) error {
	if req.Token == "" || len(req.Token) > maxTokenLength {
		return errs.Invalid("%s", msgResetInvalid)
	}
	if err := validateNewPassword(req.NewPassword); err != nil {
		return err
	}
	// The token first: a made-up one costs a read, never a hash (which would let anyone
	// keep the hasher busy for everyone's logins).
	now := s.now().UTC()
	userID, err := s.store.TakeReset(ctx, HashToken(req.Token), now)
	if errors.Is(err, ErrResetInvalid) {
		return errs.Invalid("%s", msgResetInvalid)
	}
	if err != nil {
		return err
	}
	hash, err := s.hasher.Hash(ctx, normalizePassword(req.NewPassword))
	if err != nil {
		return err
	}
	u, replaced, err := s.store.ReplacePassword(ctx, userID, "", hash, now)
	if err != nil {
		return err
	}
	if !replaced {
		return errs.Invalid("%s", msgResetInvalid)
	}
	s.endCredentials(ctx, u.ID)
	return nil
}

// endCredentials deletes the sessions a password change or reset ended (dead already by
// the raised epoch) and the reset links still out. A failure is logged: what is left is
// either dead or expires within 30 minutes.
func (s *Service) endCredentials(ctx context.Context, userID string) {
	if _, err := s.store.DeleteSessionsByUser(ctx, userID); err != nil {
		s.log.WarnContext(ctx, "delete the sessions a password change ended", "user_id", userID, "err", err)
	}
	if err := s.store.DeleteResetsOf(ctx, userID); err != nil {
		s.log.WarnContext(ctx, "delete the password resets of a changed password", "user_id", userID, "err", err)
	}
}
