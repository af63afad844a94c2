package accounts

import (
	"context"
	"errors"
	"fmt"

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

// CheckLastSuperAdmin refuses a change that would leave no super admin: demoting a super
// admin when superAdmins (counted with the target) is at most one.
func CheckLastSuperAdmin(from, to string, superAdmins int64) error {
	if from == auth.RoleSuperAdmin && to != auth.RoleSuperAdmin && superAdmins <= 1 {
		return errs.E(errs.KindConflict, "cannot demote the last super admin")
	}
	return nil
}

// SetRole changes a user's role on behalf of a super admin and records it in the audit log
// (action user.role, detail {from, to}); setting the role a user already has changes and
// records nothing.
//
// "Never zero super admins" spans documents, and holds without a transaction through a
// conditional update and a re-check: each demotion counts the super admins after its own write and undoes itself if
// it finds none. Of two super admins demoting each other at once, at least the later count
// sees the other's write and restores, so one always remains.
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
	if demotion { // a cheap early answer; the re-check after the write is what makes it hold
		if err := s.checkSuperAdmins(ctx, target.Role, role, 0); err != nil {
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
		// The count no longer includes the target; add it back for the rule.
		if err := s.checkSuperAdmins(ctx, target.Role, role, 1); err != nil {
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

// checkSuperAdmins counts the super admins now, plus extra, and applies CheckLastSuperAdmin.
func (s *Service) checkSuperAdmins(ctx context.Context, from, to string, extra int64) error {
	n, err := s.store.CountRole(ctx, auth.RoleSuperAdmin)
	if err != nil {
		return err
	}
	return CheckLastSuperAdmin(from, to, n+extra)
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
