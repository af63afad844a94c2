package accounts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// CheckRoleChange applies the role rules that need no database: only a super admin changes
// roles, only to a known role, and never their own.
func CheckRoleChange(caller identity.Caller, targetID, role string) error {
	if caller.Role != auth.RoleSuperAdmin {
		return errs.Forbidden("super admin role required")
	}
	if auth.Rank(role) == 0 {
		return errs.Invalid("role must be one of %s, %s, %s", auth.RoleUser, auth.RoleModerator, auth.RoleSuperAdmin)
	}
	if caller.UserID == targetID {
		return errs.Invalid("you cannot change your own role")
	}
	return nil
}

// lastSuperAdmin is the 409 of an action (verb: demote, ban, time out, delete) that would
// leave no active super admin.
func lastSuperAdmin(verb string) error {
	return errs.E(errs.KindConflict, "cannot %s the last active super admin", verb)
}

// activeSuperAdmin reports whether u counts as an active super admin at now.
func (u User) activeSuperAdmin(now time.Time) bool {
	return u.Role == auth.RoleSuperAdmin && u.StatusAt(now) == auth.StatusActive
}

// The rule "an active super admin always remains" spans documents and holds without a
// transaction in two steps around the action's own conditional write:
//   - before it, keepsSuperAdmin refuses at once when the target is the only active one;
//   - after it, superAdminRemains counts again, and the action undoes itself when it finds
//     none. Of two actions racing to remove the last two (super admins banning or demoting
//     each other at once), at least the later count sees the other's write, so at least one
//     undoes itself and one super admin remains.

// keepsSuperAdmin is the early check: a 409 when target is the only active super admin.
func (s *Service) keepsSuperAdmin(ctx context.Context, target User, now time.Time, verb string) error {
	if !target.activeSuperAdmin(now) {
		return nil
	}
	n, err := s.activeSuperAdmins(ctx, now)
	if err != nil {
		return err
	}
	if n <= 1 {
		return lastSuperAdmin(verb)
	}
	return nil
}

// superAdminRemains is the check after the write: a 409 when no active super admin is left.
func (s *Service) superAdminRemains(ctx context.Context, now time.Time, verb string) error {
	n, err := s.activeSuperAdmins(ctx, now)
	if err != nil {
		return err
	}
	if n == 0 {
		return lastSuperAdmin(verb)
	}
	return nil
}

func (s *Service) activeSuperAdmins(ctx context.Context, now time.Time) (int64, error) {
	return s.store.CountUsers(ctx, UserFilter{Role: auth.RoleSuperAdmin, Status: auth.StatusActive, Now: now})
}

// SetRole changes a user's role on behalf of a super admin and records it in the audit log
// (action user.role, detail {from, to}); setting the role a user already has changes and
// records nothing. A demotion never leaves no active super admin (see keepsSuperAdmin).
func (s *Service) SetRole(ctx context.Context, caller identity.Caller, targetID, role string) (auth.User, error) {
	if err := CheckRoleChange(caller, targetID, role); err != nil {
		return auth.User{}, err
	}
	if _, err := s.superAdmin(ctx, caller); err != nil {
		return auth.User{}, err
	}
	target, err := s.store.UserByID(ctx, targetID)
	if errors.Is(err, ErrUserNotFound) {
		return auth.User{}, errs.NotFound("user not found")
	}
	if err != nil {
		return auth.User{}, err
	}
	now := s.now().UTC()
	if target.Role == role {
		return target.View(now), nil
	}
	demotion := target.Role == auth.RoleSuperAdmin
	if demotion {
		if err := s.keepsSuperAdmin(ctx, target, now, "demote"); err != nil {
			return auth.User{}, err
		}
	}
	changed, err := s.store.SetRole(ctx, target.ID, target.Role, role, now)
	if err != nil {
		return auth.User{}, err
	}
	if !changed {
		return auth.User{}, errs.E(errs.KindConflict, "the user's role was changed at the same time; try again")
	}
	if demotion {
		if err := s.superAdminRemains(ctx, now, "demote"); err != nil {
			return auth.User{}, s.undoRole(ctx, target, role, err)
		}
	}
	if err := s.record(ctx, moderation.AuditUserRole, target.ID, map[string]any{"from": target.Role, "to": role}); err != nil {
		// A change without its audit entry must not stand: put the old role back.
		return auth.User{}, s.undoRole(ctx, target, role, err)
	}
	target.Role, target.UpdatedAt = role, now
	return target.View(now), nil
}

// undoRole puts the target's old role back after a change that must not stand (a demotion
// that left no super admin or could not be checked, a change without its audit entry), and
// returns cause. It runs even if the caller has gone.
func (s *Service) undoRole(ctx context.Context, target User, to string, cause error) error {
	ctx = context.WithoutCancel(ctx)
	restored, err := s.store.SetRole(ctx, target.ID, to, target.Role, s.now().UTC())
	if err != nil || !restored {
		s.log.ErrorContext(ctx, "restore role after a refused change failed",
			"user_id", target.ID, "role", target.Role, "restored", restored, "err", err, "cause", cause)
		if err != nil {
			// Not the cause: the change may stand, which an operator must see as a failure.
			return fmt.Errorf("restore role after a refused change: %w", err)
		}
	}
	return cause
}
