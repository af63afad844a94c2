package accounts

import (
	"context"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// freshSignIn is how recent an identity-provider sign-in must be to delete an account
// without a password.
const freshSignIn = 10 * time.Minute

// DeleteAccount deletes the caller's account, given its password (or, for an account
// without one, an identity-provider sign-in within the last 10 minutes). Without a
// transaction, as steps that each heal on retry:
//
//  1. a super admin is demoted first, under the rule that an active super admin always
//     remains (409 for the last one; see keepsSuperAdmin);
//  2. its tokens, sessions, reset and verification links go (so nothing creates links while
//     they are purged), and its login records keep only the keyed hash of their address;
//  3. the link service purges the account's links, with their clicks, and its webhooks; the
//     moderation service drops its permanent requests and the User-Agent of its audit
//     entries; its unsent mail goes;
//  4. the account's document goes.
//
// A failure leaves the account with what is left, and deleting again finishes it. What
// stays for security is what holds no more of the person than keyed hashes: the login
// records and the audit entries.
func (s *Service) DeleteAccount(ctx context.Context, caller identity.Caller, req auth.DeleteAccountRequest) error {
	if err := signedInSession(caller); err != nil {
		return err
	}
	u, err := s.sessionUser(ctx, caller)
	if err != nil {
		return err
	}
	if err := s.confirmDeletion(ctx, caller, u, req); err != nil {
		return err
	}
	now := s.now().UTC()
	if u.Role == auth.RoleSuperAdmin {
		if err := s.keepsSuperAdmin(ctx, u, now, "delete"); err != nil {
			return err
		}
		changed, err := s.store.SetRole(ctx, u.ID, u.Role, auth.RoleUser, now)
		if err != nil {
			return err
		}
		if !changed {
			return errs.E(errs.KindConflict, "the account was changed at the same time; try again")
		}
		if err := s.superAdminRemains(ctx, now, "delete"); err != nil {
			return s.undoRole(ctx, u, auth.RoleUser, err)
		}
	}
	// Credentials first, so nothing can create links while they are being purged; the
	// caller's own session goes too, and a retry signs in again.
	if err := s.store.ForgetAccount(ctx, u.ID, u.Email); err != nil {
		return err
	}
	if err := s.links.DeleteAll(ctx); err != nil {
		return err
	}
	if err := s.audit.Forget(ctx); err != nil {
		return err
	}
	if err := s.mail.Forget(ctx, u.Email); err != nil {
		return err
	}
	return s.store.DeleteUser(ctx, u.ID)
}

// confirmDeletion checks the caller's proof: the password, counted like a login attempt
// (so deletion cannot be used to guess it); or a fresh identity-provider sign-in.
func (s *Service) confirmDeletion(ctx context.Context, caller identity.Caller, u User, req auth.DeleteAccountRequest) error {
	if u.PasswordHash == "" {
		// The session this request comes with must be that fresh sign-in, not any session
		// of an account someone signed in to lately.
		sessions, err := s.store.SessionsOf(ctx, u.ID, s.now())
		if err != nil {
			return err
		}
		for _, sess := range sessions {
			if sess.ID() == caller.SessionID && s.now().Sub(sess.CreatedAt) <= freshSignIn {
				return nil
			}
		}
		return errs.E(errs.KindUnauthenticated, "sign in again with your identity provider, then delete the account within 10 minutes")
	}
	if req.Password == "" {
		return errs.Invalid("password is required")
	}
	return s.checkOwnPassword(ctx, caller, u, req.Password, "password is wrong")
}
