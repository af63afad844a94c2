package accounts

import (
	"context"
	"errors"
	"fmt"

	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
)

// googleAttempts bounds the find-or-create loop when concurrent first logins race.
const googleAttempts = 3

// googleUser finds the account of id by subject, then by e-mail (linking it), or creates it,
// and says whether this login linked it. The unique e-mail index decides concurrent first
// logins; the loser looks again.
func (s *Service) googleUser(ctx context.Context, id idp.Identity, email string) (User, bool, error) {
	for range googleAttempts {
		u, err := s.store.UserByIDPUID(ctx, id.Subject)
		if err == nil || !errors.Is(err, ErrUserNotFound) {
			return u, false, err
		}
		u, err = s.store.UserByEmail(ctx, email)
		if err == nil {
			return s.link(ctx, u, id.Subject)
		}
		if !errors.Is(err, ErrUserNotFound) {
			return User{}, false, err
		}
		u = newGoogleUser(id, email, s.now().UTC())
		err = s.store.InsertUser(ctx, u)
		if err == nil {
			return u, false, nil
		}
		if !errors.Is(err, ErrEmailTaken) {
			return User{}, false, err
		}
	}
	return User{}, false, fmt.Errorf("find or create google account: still racing after %d attempts", googleAttempts)
}

// link links an account found by the provider's verified e-mail to sub, and says whether
// this call did it. An account linked to another subject stays as it is.
//
// Registration never proves an e-mail, so whoever registered the address may not be the
// person the provider vouches for: someone could have registered a victim's address first
// and kept its password and a session. Linking therefore hands the account to the provider's
// user alone: one conditional update sets idp_uid and auth_provider google, removes the
// password and raises the session epoch, which ends every older session at once, even one a
// racing password login writes afterwards. Deleting those sessions then only frees space.
func (s *Service) link(ctx context.Context, u User, sub string) (User, bool, error) {
	if u.IDPUID == sub {
		return u, false, nil
	}
	if u.IDPUID != "" {
		return User{}, false, errIdentityConflict
	}
	linked, err := s.store.LinkIDP(ctx, u.ID, sub, s.now().UTC())
	if err != nil {
		return User{}, false, err
	}
	if linked {
		s.deleteSessions(ctx, u.ID)
	}
	// Read back: the new session must carry the raised epoch.
	u, err = s.store.UserByID(ctx, u.ID)
	if err != nil {
		return User{}, false, err
	}
	if u.IDPUID != sub { // someone linked it meanwhile to another subject
		return User{}, false, errIdentityConflict
	}
	if linked {
		s.log.InfoContext(ctx, "linked an account to its identity provider subject; its password and sessions were removed",
			"user_id", u.ID)
	}
	return u, linked, nil
}

// deleteSessions deletes the sessions a raised epoch has already ended. A failure is only
// logged: they stay invalid, and the database deletes them when they expire.
func (s *Service) deleteSessions(ctx context.Context, userID string) {
	n, err := s.store.DeleteSessionsByUser(context.WithoutCancel(ctx), userID)
	if err != nil {
		s.log.WarnContext(ctx, "delete the sessions of a linked account failed", "user_id", userID, "err", err)
		return
	}
	s.log.InfoContext(ctx, "deleted the sessions of a linked account", "user_id", userID, "deleted", n)
}
