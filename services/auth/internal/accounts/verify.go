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

// verifyTTL is how long a verification link works, and how long an unverified account holds
// its address against another registration.
const verifyTTL = 24 * time.Hour

const msgVerificationInvalid = "verification link is invalid, used or expired"

// unverifiedHolder answers a registration of an address an unverified account holds. Less
// than verifyTTL old, the account keeps it: the verification mail goes to the address again
// and the answer looks exactly like a new registration's, so it tells nobody that the
// address is taken, yet signs nobody in to that account (its session is no session) and
// changes nothing of it; only the address's owner can verify it (and then reset its
// password). Older, the stale account is deleted and the registration goes on (answered
// false): nobody squats an address they cannot verify.
func (s *Service) unverifiedHolder(ctx context.Context, held User, reg Registration, id string) (auth.Session, bool, error) {
	now := s.now().UTC()
	if now.Sub(held.CreatedAt) >= verifyTTL {
		if _, err := s.store.DeleteUnverified(ctx, held.ID, now.Add(-verifyTTL)); err != nil {
			return auth.Session{}, false, err
		}
		return auth.Session{}, false, nil
	}
	// A new registration costs a hash: so does this answer.
	s.burnDummy(ctx, reg.Password)
	if err := s.sendVerification(ctx, held); err != nil {
		// As a new registration would: the registration stands, the mail can be asked again.
		s.log.WarnContext(ctx, "mail the verification of an unverified account again", "user_id", held.ID, "err", err)
	}
	token, _, err := NewSessionToken()
	if err != nil {
		return auth.Session{}, true, err
	}
	lookalike := User{ID: id, Email: reg.Email, FirstName: reg.FirstName, LastName: reg.LastName,
		AuthProvider: auth.ProviderEmail, Role: auth.RoleUser, Status: auth.StatusActive, QuotaLimit: DefaultQuotaLimit,
		CreatedAt: now, UpdatedAt: now, LastLoginAt: &now, EmailUnverified: true}
	return auth.Session{User: lookalike.View(now), Token: token, ExpiresAt: now.Add(s.ttl)}, true, nil
}

// sendVerification mails u's address a single-use link that verifies it, for verifyTTL.
func (s *Service) sendVerification(ctx context.Context, u User) error {
	token, hash, err := NewSessionToken()
	if err != nil {
		return err
	}
	now := s.now().UTC()
	if err := s.store.InsertVerification(ctx, hash, u.ID, u.Email, now, now.Add(verifyTTL)); err != nil {
		return err
	}
	return s.mail.Enqueue(ctx, "verify-"+hash[:32], mail.Message{To: u.Email, Subject: "Verify your e-mail address for linkmesh",
		Text: "An account was registered on linkmesh with this address, hopefully by you.\n\n" +
			"To verify the address, open this link within 24 hours (it works once):\n\n" +
			s.baseURL + "/#/verify-email?token=" + token + "\n\n" +
			"Until then the account can sign in but not create links. If you did not register, ignore this mail.\n"})
}

// VerifyEmail verifies the address a mailed token was sent to, if the account still has it,
// and returns the account. Every session of the account ends: whoever registered the address
// before its owner opened the link keeps no way in (the owner signs in, or resets the
// password the registrant chose). The token works once; an unknown, used or expired one is
// a 400.
func (s *Service) VerifyEmail(ctx context.Context, req auth.VerifyEmailRequest) (auth.User, error) {
	if req.Token == "" || len(req.Token) > maxTokenLength {
		return auth.User{}, errs.Invalid(msgVerificationInvalid)
	}
	now := s.now().UTC()
	userID, email, err := s.store.TakeVerification(ctx, HashToken(req.Token), now)
	if errors.Is(err, ErrVerificationInvalid) {
		return auth.User{}, errs.Invalid(msgVerificationInvalid)
	}
	if err != nil {
		return auth.User{}, err
	}
	marked, err := s.store.MarkVerified(ctx, userID, email, now)
	if err != nil {
		return auth.User{}, err
	}
	if !marked {
		return auth.User{}, errs.Invalid(msgVerificationInvalid)
	}
	if _, err := s.store.DeleteSessionsByUser(ctx, userID); err != nil {
		s.log.WarnContext(ctx, "delete the sessions a verification ended", "user_id", userID, "err", err)
	}
	u, err := s.store.UserByID(ctx, userID)
	if err != nil {
		return auth.User{}, err
	}
	return u.View(now), nil
}

// ResendVerification mails the caller's verification link again: at most quota.ResendLimit
// times per quota.ResendWindow. A verified address is a 409.
func (s *Service) ResendVerification(ctx context.Context, caller identity.Caller) error {
	if err := signedInSession(caller); err != nil {
		return err
	}
	u, err := s.sessionUser(ctx, caller)
	if err != nil {
		return err
	}
	if !u.EmailUnverified {
		return errs.E(errs.KindConflict, "e-mail address is already verified")
	}
	if _, err := quota.Take(ctx, s.quota, quota.ReserveRequest{Scope: quota.ScopeVerifyResend, Key: u.ID},
		"too many verification mails; try again later"); err != nil {
		return err
	}
	return s.sendVerification(ctx, u)
}
