package accounts

import (
	"context"
	"errors"
	"fmt"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/services/auth/internal/password"
)

// bootstrapAttempts bounds the insert-or-promote loop against concurrent changes.
const bootstrapAttempts = 3

// Bootstrap makes sure the configured first super admin exists, at every start. A missing
// account is created as a super admin with the configured password. An existing account
// keeps its password: a super admin stays as it is, and any other account is promoted only
// if its password is the configured one.
//
// Registration does not verify e-mails, so anyone may have registered the bootstrap address
// before the first start; knowing the configured password is what shows that the account is
// the operator's. An account without that proof is not promoted: the error is logged and
// start-up goes on, since registering an address must not be a way to keep the service
// down. Several replicas may run Bootstrap at once: the unique e-mail index decides who
// creates.
func (s *Service) Bootstrap(ctx context.Context, email, pw string) error {
	email, err := ValidateEmail(email)
	if err != nil {
		return fmt.Errorf("bootstrap admin e-mail: %w", err)
	}
	if err := ValidatePassword(pw); err != nil {
		return fmt.Errorf("bootstrap admin password: %w", err)
	}
	for range bootstrapAttempts {
		u, err := s.store.UserByEmail(ctx, email)
		switch {
		case errors.Is(err, ErrUserNotFound):
			created, err := s.createBootstrapAdmin(ctx, email, pw)
			if created || err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			done, err := s.ensureBootstrapAdmin(ctx, u, pw)
			if done || err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("bootstrap admin %s: still racing after %d attempts", email, bootstrapAttempts)
}

// ensureBootstrapAdmin applies the rules to the existing account u; false when its role
// changed under us and it must be read again.
func (s *Service) ensureBootstrapAdmin(ctx context.Context, u User, pw string) (bool, error) {
	owned, err := s.hasPassword(ctx, u, pw)
	if err != nil {
		return false, err
	}
	switch {
	case u.Role == auth.RoleSuperAdmin:
		if !owned {
			// Not an error: the password may have been changed on purpose; but the setting
			// does not do what it says.
			s.log.WarnContext(ctx, "bootstrap password ignored for an existing account",
				"email", u.Email, "user_id", u.ID)
		}
		return true, nil
	case !owned:
		s.log.ErrorContext(ctx, "bootstrap admin not promoted: an account with this e-mail exists and "+
			"the configured bootstrap password is not its password", "email", u.Email, "user_id", u.ID, "role", u.Role)
		return true, nil
	}
	return s.promote(ctx, u)
}

// hasPassword reports whether pw is u's password. An account without one, or whose stored
// hash cannot be read, does not have it.
func (s *Service) hasPassword(ctx context.Context, u User, pw string) (bool, error) {
	if u.PasswordHash == "" {
		return false, nil
	}
	ok, _, err := s.hasher.Check(ctx, pw, u.PasswordHash)
	if errors.Is(err, password.ErrMalformed) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check the bootstrap admin password: %w", err)
	}
	return ok, nil
}

func (s *Service) createBootstrapAdmin(ctx context.Context, email, pw string) (bool, error) {
	hash, err := s.hasher.Hash(ctx, pw)
	if err != nil {
		return false, err
	}
	now := s.now().UTC()
	u := User{ID: newID(), Email: email, FirstName: "Super", LastName: "Admin", PasswordHash: hash,
		AuthProvider: auth.ProviderEmail, Role: auth.RoleSuperAdmin, Status: auth.StatusActive,
		QuotaLimit: DefaultQuotaLimit, CreatedAt: now, UpdatedAt: now}
	err = s.store.InsertUser(ctx, u)
	if errors.Is(err, ErrEmailTaken) {
		return false, nil // another replica was first; promote what it made
	}
	if err != nil {
		return false, err
	}
	s.log.InfoContext(ctx, "created the bootstrap super admin", "user_id", u.ID)
	return true, nil
}

// promote makes u, whose password is the configured one, a super admin; false when its role
// changed under us and it must be read again. The promotion is logged, not written to the
// audit log: that log records what a signed-in caller did, and this is the operator's
// setting taking effect, with no caller to name; start-up must not wait for the
// moderation service either.
func (s *Service) promote(ctx context.Context, u User) (bool, error) {
	if u.Role == auth.RoleSuperAdmin {
		return true, nil
	}
	now := s.now().UTC()
	changed, err := s.store.SetRole(ctx, u.ID, u.Role, auth.RoleSuperAdmin, now)
	if err != nil || !changed {
		return false, err
	}
	s.log.InfoContext(ctx, "promoted the bootstrap admin to super admin", "user_id", u.ID, "from", u.Role)
	return true, nil
}
