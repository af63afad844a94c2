package accounts

import (
	"context"
	"errors"
	"fmt"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
)

// BootstrapActor is the actor_id of role changes made by the bootstrap at start-up.
const BootstrapActor = "system:bootstrap"

// bootstrapAttempts bounds the insert-or-promote loop against concurrent changes.
const bootstrapAttempts = 3

// Bootstrap makes sure the configured first super admin exists, at every start: it creates
// the account if missing and otherwise only makes sure its role is super_admin (its password
// stays). Several replicas may run it at once: the unique e-mail index decides who creates.
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
		case err == nil:
			done, err := s.promote(ctx, u)
			if done || err != nil {
				return err
			}
			continue
		case !errors.Is(err, ErrUserNotFound):
			return err
		}
		created, err := s.createBootstrapAdmin(ctx, email, pw)
		if created || err != nil {
			return err
		}
	}
	return fmt.Errorf("bootstrap admin %s: still racing after %d attempts", email, bootstrapAttempts)
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

// promote makes u a super admin; false when its role changed under us and it must be read
// again.
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
	return true, s.store.InsertRoleChange(ctx, RoleChange{ID: newID(), ActorID: BootstrapActor, TargetID: u.ID,
		FromRole: u.Role, ToRole: auth.RoleSuperAdmin, CreatedAt: now})
}
