package accounts

import (
	"context"
	"errors"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
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
	if err := ValidatePassword(req.NewPassword); err != nil {
		if e, ok := errs.As(err); ok {
			return auth.Session{}, errs.Invalid("new_%s", e.Message)
		}
		return auth.Session{}, err
	}
	u, err := s.store.UserByID(ctx, caller.UserID)
	if errors.Is(err, ErrUserNotFound) {
		return auth.Session{}, sessionInvalid()
	}
	if err != nil {
		return auth.Session{}, err
	}
	if u.PasswordHash == "" {
		return auth.Session{}, errs.Invalid("this account signs in with its identity provider and has no password")
	}
	rec := s.newRecord(caller, MethodPassword, u.Email)
	rec.UserID = u.ID
	units, err := s.reserveLogin(ctx, u.Email, caller, auth.CaptchaOff)
	if err != nil {
		return auth.Session{}, s.fail(ctx, rec, failureReason(err), err)
	}
	ok, _, err := s.hasher.Check(ctx, req.CurrentPassword, u.PasswordHash)
	if err != nil {
		s.releaseLogin(ctx, units)
		return auth.Session{}, err
	}
	if !ok {
		return auth.Session{}, s.fail(ctx, rec, ReasonWrongCurrentPassword, errs.E(errs.KindUnauthenticated, "current password is wrong"))
	}
	s.releaseLogin(ctx, units)
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
	// The sessions the epoch ended are deleted too; one left by a failure here is dead anyway.
	if _, err := s.store.DeleteSessionsByUser(ctx, u.ID); err != nil {
		s.log.WarnContext(ctx, "delete the sessions a password change ended", "user_id", u.ID, "err", err)
	}
	rec.Reason = ReasonPasswordChanged
	return s.issue(ctx, changed, rec, now)
}
