package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// Bounds of the moderation requests.
const (
	MinTimeoutSeconds = 30
	MaxTimeoutSeconds = 7 * 24 * 60 * 60 // a week
	MaxReasonLength   = 2000
)

// Refusals of the moderation actions.
const (
	msgModeratorRequired = "moderator role required"
	msgOwnAccount        = "you cannot act on your own account"
	msgHigherRank        = "you cannot act on a user of equal or higher rank"
)

// CheckModeration applies the rules of a timeout, ban or unban that need no database: the
// caller is at least a moderator, and not acting on their own account.
func CheckModeration(caller identity.Caller, targetID string) error {
	if auth.Rank(caller.Role) < auth.Rank(auth.RoleModerator) || caller.UserID == "" {
		return errs.Forbidden(msgModeratorRequired)
	}
	if caller.UserID == targetID {
		return errs.Invalid(msgOwnAccount)
	}
	return nil
}

// CheckRank lets an actor act only on a user of lower rank; a super admin may act on anyone
// (their own account is refused before).
func CheckRank(actorRole, targetRole string) error {
	if actorRole == auth.RoleSuperAdmin || auth.Rank(targetRole) < auth.Rank(actorRole) {
		return nil
	}
	return errs.Forbidden(msgHigherRank)
}

// ValidateTimeout checks a timeout request and returns its duration and trimmed reason.
func ValidateTimeout(req auth.TimeoutRequest) (time.Duration, string, error) {
	if req.DurationSeconds == nil {
		return 0, "", errs.Invalid("duration_seconds is required")
	}
	if d := *req.DurationSeconds; d < MinTimeoutSeconds || d > MaxTimeoutSeconds {
		return 0, "", errs.Invalid("duration_seconds must be between %d and %d", MinTimeoutSeconds, MaxTimeoutSeconds)
	}
	reason, err := validateReason(req.Reason)
	if err != nil {
		return 0, "", err
	}
	return time.Duration(*req.DurationSeconds) * time.Second, reason, nil
}

// ValidateBan checks a ban request and returns its trimmed reason and whether the user's
// links go too.
func ValidateBan(req auth.BanRequest) (string, bool, error) {
	reason, err := validateReason(req.Reason)
	if err != nil {
		return "", false, err
	}
	return reason, req.DeactivateLinks != nil && *req.DeactivateLinks, nil
}

// validateReason requires a reason: the user sees it, and the audit log keeps it.
func validateReason(r *string) (string, error) {
	if r == nil || strings.TrimSpace(*r) == "" {
		return "", errs.Invalid("reason is required")
	}
	reason := strings.TrimSpace(*r)
	return reason, errs.Text("reason", reason, MaxReasonLength)
}

// Timeout suspends the target for the requested duration: it cannot log in or use the
// service until then, and reads active again by itself afterwards. A new timeout replaces a
// running one. A banned user cannot be timed out: the ban already blocks everything, and
// the unban would lift the timeout with it.
func (s *Service) Timeout(ctx context.Context, caller identity.Caller, targetID string, req auth.TimeoutRequest) (auth.User, error) {
	if err := CheckModeration(caller, targetID); err != nil {
		return auth.User{}, err
	}
	d, reason, err := ValidateTimeout(req)
	if err != nil {
		return auth.User{}, err
	}
	target, err := s.target(ctx, caller, targetID)
	if err != nil {
		return auth.User{}, err
	}
	if target.Status == auth.StatusBanned {
		return auth.User{}, errs.E(errs.KindConflict, "user is banned")
	}
	now := s.now().UTC()
	until := now.Add(d)
	to := target.Standing()
	to.TimeoutUntil, to.TimeoutReason = &until, &reason
	u, err := s.apply(ctx, target, to, now, "time out", moderation.AuditUserTimeout,
		map[string]any{"duration_seconds": *req.DurationSeconds, "reason": reason, "timeout_until": until})
	if err != nil {
		return auth.User{}, err
	}
	return u.View(now), nil
}

// Ban bans the target with a reason and, when asked, disables all of its links. Banning a
// banned user again is allowed: it replaces the reason, and a second try at the links
// disables only those left. The ban stands once written and recorded, so a failure to
// disable the links says so and can be retried by banning again.
func (s *Service) Ban(ctx context.Context, caller identity.Caller, targetID string, req auth.BanRequest) (auth.BanResponse, error) {
	if err := CheckModeration(caller, targetID); err != nil {
		return auth.BanResponse{}, err
	}
	reason, deactivate, err := ValidateBan(req)
	if err != nil {
		return auth.BanResponse{}, err
	}
	target, err := s.target(ctx, caller, targetID)
	if err != nil {
		return auth.BanResponse{}, err
	}
	now := s.now().UTC()
	to := target.Standing()
	to.Status, to.BanReason = auth.StatusBanned, &reason
	u, err := s.apply(ctx, target, to, now, "ban", moderation.AuditUserBan,
		map[string]any{"reason": reason, "deactivate_links": deactivate})
	if err != nil {
		return auth.BanResponse{}, err
	}
	out := auth.BanResponse{User: u.View(now)}
	if !deactivate {
		return out, nil
	}
	n, err := s.links.DisableOwner(ctx, u.ID, link.DisableRequest{Reason: &reason})
	if err != nil {
		s.log.ErrorContext(ctx, "disable the links of a banned user failed", "user_id", u.ID, "err", err)
		return auth.BanResponse{}, errs.Unavailable("the user is banned, but their links could not be disabled; ban again to retry", err)
	}
	out.LinksDisabled = n
	return out, nil
}

// Unban lifts the target's ban and any timeout; its links stay as they are. A user with
// neither is left alone, and nothing is recorded.
func (s *Service) Unban(ctx context.Context, caller identity.Caller, targetID string) (auth.User, error) {
	if err := CheckModeration(caller, targetID); err != nil {
		return auth.User{}, err
	}
	target, err := s.target(ctx, caller, targetID)
	if err != nil {
		return auth.User{}, err
	}
	now := s.now().UTC()
	to := Standing{Status: auth.StatusActive}
	if target.Standing() == to {
		return target.View(now), nil
	}
	u, err := s.apply(ctx, target, to, now, "unban", moderation.AuditUserUnban, map[string]any{})
	if err != nil {
		return auth.User{}, err
	}
	return u.View(now), nil
}

// target checks the acting moderator against the database and returns the account they act
// on, if their rank allows it.
func (s *Service) target(ctx context.Context, caller identity.Caller, targetID string) (User, error) {
	actor, err := s.moderator(ctx, caller)
	if err != nil {
		return User{}, err
	}
	target, err := s.store.UserByID(ctx, targetID)
	if errors.Is(err, ErrUserNotFound) {
		return User{}, errs.NotFound("user not found")
	}
	if err != nil {
		return User{}, err
	}
	if err := CheckRank(actor.Role, target.Role); err != nil {
		return User{}, err
	}
	return target, nil
}

// apply writes the standing to over target's, if it is still the one read, and records the
// action in the audit log. An action (verb) that takes away the last active super admin is
// refused, or undone when a concurrent one got there first (see keepsSuperAdmin). An action
// whose entry cannot be written must not stand: the standing read (and updated_at) is put
// back and the audit error returned.
func (s *Service) apply(ctx context.Context, target User, to Standing, now time.Time, verb, action string, detail map[string]any) (User, error) {
	removes := target.activeSuperAdmin(now) && !target.withStanding(to).activeSuperAdmin(now)
	if removes {
		if err := s.keepsSuperAdmin(ctx, target, now, verb); err != nil {
			return User{}, err
		}
	}
	from := target.Standing()
	changed, err := s.store.SetStanding(ctx, target.ID, from, to, now)
	if err != nil {
		return User{}, err
	}
	if !changed {
		return User{}, errs.E(errs.KindConflict, "the user was changed at the same time; try again")
	}
	if removes {
		if err := s.superAdminRemains(ctx, now, verb); err != nil {
			return User{}, s.undoStanding(ctx, target, to, err)
		}
	}
	if err := s.record(ctx, action, target.ID, detail); err != nil {
		return User{}, s.undoStanding(ctx, target, to, err)
	}
	u := target.withStanding(to)
	u.UpdatedAt = now
	return u, nil
}

// undoStanding puts target's standing and updated_at back over to, and returns cause. It
// runs even if the caller has gone; if the standing changed again meanwhile, that newer
// change is left alone.
func (s *Service) undoStanding(ctx context.Context, target User, to Standing, cause error) error {
	ctx = context.WithoutCancel(ctx)
	restored, err := s.store.SetStanding(ctx, target.ID, to, target.Standing(), target.UpdatedAt)
	if err != nil || !restored {
		s.log.ErrorContext(ctx, "restore standing after an unrecorded moderation action failed",
			"user_id", target.ID, "restored", restored, "err", err, "cause", cause)
		if err != nil {
			return fmt.Errorf("restore standing after an unrecorded moderation action: %w", err)
		}
	}
	return cause
}

// record writes one audit entry for an action on the user targetID. The moderation service
// names the actor from the identity token ctx carries; a fresh id per action makes a
// repeated delivery of the same entry write nothing twice.
func (s *Service) record(ctx context.Context, action, targetID string, detail map[string]any) error {
	err := s.audit.Audit(ctx, moderation.AuditRecord{ID: newID(), Action: action,
		TargetType: moderation.TargetUser, TargetID: targetID, Detail: detail})
	if err != nil {
		return fmt.Errorf("write audit entry %s: %w", action, err)
	}
	return nil
}
