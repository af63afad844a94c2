package accounts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// moderationAction runs one of the three actions with a valid request.
type moderationAction struct {
	name   string
	audit  string
	status string // the target's status after it
	run    func(u *unit, c identity.Caller, target string) (auth.User, error)
}

var moderationActions = []moderationAction{
	{"timeout", moderation.AuditUserTimeout, auth.StatusSuspended, func(u *unit, c identity.Caller, target string) (auth.User, error) {
		return u.svc.Timeout(context.Background(), c, target, auth.TimeoutRequest{DurationSeconds: ptr[int64](3600), Reason: ptr("spam")})
	}},
	{"ban", moderation.AuditUserBan, auth.StatusBanned, func(u *unit, c identity.Caller, target string) (auth.User, error) {
		res, err := u.svc.Ban(context.Background(), c, target, auth.BanRequest{Reason: ptr("phishing")})
		return res.User, err
	}},
	{"unban", moderation.AuditUserUnban, auth.StatusActive, func(u *unit, c identity.Caller, target string) (auth.User, error) {
		return u.svc.Unban(context.Background(), c, target)
	}},
}

// startingPoint is the target before an action: active for a timeout or a ban, banned
// with a running timeout for an unban (so that each action changes something).
func startingPoint(action string, u accounts.User) accounts.User {
	if action == "unban" {
		u.Status, u.BanReason = auth.StatusBanned, ptr("spam")
		u.TimeoutUntil, u.TimeoutReason = ptr(unitEpoch.Add(time.Hour)), ptr("cool off")
	}
	return u
}

// Who may act on whom: every action, every pair of ranks, one's own account and an unknown
// one. Refusals come in the contract's order and change and record nothing.
func TestModerationRankTable(t *testing.T) {
	const (
		modRequired = "moderator role required"
		ownAccount  = "you cannot act on your own account"
		higherRank  = "you cannot act on a user of equal or higher rank"
		notFound    = "user not found"
	)
	cases := []struct {
		actor, target string // target: a role, "self" or "unknown"
		kind          errs.Kind
		msg           string // "" = allowed
	}{
		{auth.RoleUser, auth.RoleUser, errs.KindForbidden, modRequired},
		{auth.RoleUser, auth.RoleModerator, errs.KindForbidden, modRequired},
		{auth.RoleUser, auth.RoleSuperAdmin, errs.KindForbidden, modRequired},
		{auth.RoleUser, "self", errs.KindForbidden, modRequired},
		{auth.RoleUser, "unknown", errs.KindForbidden, modRequired},
		{identity.RoleAnonymous, auth.RoleUser, errs.KindForbidden, modRequired},
		{auth.RoleModerator, auth.RoleUser, 0, ""},
		{auth.RoleModerator, auth.RoleModerator, errs.KindForbidden, higherRank},
		{auth.RoleModerator, auth.RoleSuperAdmin, errs.KindForbidden, higherRank},
		{auth.RoleModerator, "self", errs.KindInvalid, ownAccount},
		{auth.RoleModerator, "unknown", errs.KindNotFound, notFound},
		{auth.RoleSuperAdmin, auth.RoleUser, 0, ""},
		{auth.RoleSuperAdmin, auth.RoleModerator, 0, ""},
		{auth.RoleSuperAdmin, auth.RoleSuperAdmin, 0, ""},
		{auth.RoleSuperAdmin, "self", errs.KindInvalid, ownAccount},
		{auth.RoleSuperAdmin, "unknown", errs.KindNotFound, notFound},
	}
	for _, act := range moderationActions {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%s on %s", act.name, tc.actor, tc.target), func(t *testing.T) {
				actor := startingPoint(act.name, account("actor", tc.actor))
				actor.Status, actor.BanReason, actor.TimeoutUntil, actor.TimeoutReason = auth.StatusActive, nil, nil, nil
				targetRole, targetID := tc.target, "target"
				switch tc.target {
				case "self":
					targetRole, targetID = tc.actor, "actor"
				case "unknown":
					targetRole, targetID = auth.RoleUser, "ghost"
				}
				u := newUnit(t, actor, startingPoint(act.name, account("target", targetRole)))
				before := u.store.get(t, "target")
				c := identity.Caller{UserID: "actor", Role: tc.actor}
				if tc.actor == identity.RoleAnonymous {
					c = identity.Anonymous
				}
				got, err := act.run(u, c, targetID)
				if tc.msg != "" {
					wantErr(t, err, tc.kind, tc.msg)
					if n := len(u.audit.all()); n != 0 || u.store.writes != 0 {
						t.Fatalf("a refusal wrote %d times and %d audit entries", u.store.writes, n)
					}
					if after := u.store.get(t, "target"); !sameUser(after, before) {
						t.Fatalf("a refusal changed the target: %+v", after)
					}
					return
				}
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				stored := u.store.get(t, "target")
				if got.ID != "target" || got.Status != act.status || stored.StatusAt(unitEpoch) != act.status ||
					!got.UpdatedAt.Equal(unitEpoch) || !stored.UpdatedAt.Equal(unitEpoch) {
					t.Fatalf("after %s: answered %+v, stored %+v", act.name, got, stored)
				}
				entries := u.audit.all()
				if len(entries) != 1 || entries[0].Action != act.audit || entries[0].TargetType != moderation.TargetUser ||
					entries[0].TargetID != "target" || entries[0].ID == "" {
					t.Fatalf("audit entries = %+v", entries)
				}
				if calls := u.links.all(); len(calls) != 0 {
					t.Fatalf("links disabled without being asked: %+v", calls)
				}
			})
		}
	}
}

// The token alone is not enough: the database's role decides, and a banned moderator acts on
// nobody.
func TestModerationReadsTheActorFresh(t *testing.T) {
	demoted := account("actor", auth.RoleUser)
	modAsSuper := account("actor", auth.RoleModerator)
	banned := account("actor", auth.RoleModerator)
	banned.Status = auth.StatusBanned
	suspended := account("actor", auth.RoleModerator)
	suspended.TimeoutUntil = ptr(unitEpoch.Add(time.Minute))
	cases := []struct {
		name       string
		actor      accounts.User
		tokenRole  string
		targetRole string
		kind       errs.Kind
		msg        string
	}{
		{"demoted since the token", demoted, auth.RoleModerator, auth.RoleUser, errs.KindForbidden, "moderator role required"},
		{"token says more than the database", modAsSuper, auth.RoleSuperAdmin, auth.RoleModerator, errs.KindForbidden,
			"you cannot act on a user of equal or higher rank"},
		{"database says more than the token", account("actor", auth.RoleModerator), auth.RoleUser, auth.RoleUser,
			errs.KindForbidden, "moderator role required"},
		{"banned moderator", banned, auth.RoleModerator, auth.RoleUser, errs.KindForbidden, "account is banned"},
		{"suspended moderator", suspended, auth.RoleModerator, auth.RoleUser, errs.KindForbidden,
			"account is suspended until " + unitEpoch.Add(time.Minute).Format(time.RFC3339)},
		{"account gone", account("someone-else", auth.RoleModerator), auth.RoleModerator, auth.RoleUser, errs.KindForbidden,
			"moderator role required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, act := range moderationActions {
				u := newUnit(t, tc.actor, startingPoint(act.name, account("target", tc.targetRole)))
				_, err := act.run(u, identity.Caller{UserID: "actor", Role: tc.tokenRole}, "target")
				wantErr(t, err, tc.kind, tc.msg)
				if u.store.writes != 0 || len(u.audit.all()) != 0 {
					t.Fatalf("%s: a refusal wrote something", act.name)
				}
			}
		})
	}
}

func TestModerationValidation(t *testing.T) {
	const between = "duration_seconds must be between 30 and 604800"
	const required = "reason is required"
	const tooLong = "reason must be valid text of at most 2000 characters"
	mod := identity.Caller{UserID: "mod", Role: auth.RoleModerator}
	timeouts := []struct {
		name string
		req  auth.TimeoutRequest
		msg  string // "" = accepted
	}{
		{"shortest", auth.TimeoutRequest{DurationSeconds: ptr[int64](30), Reason: ptr("spam")}, ""},
		{"longest", auth.TimeoutRequest{DurationSeconds: ptr[int64](604800), Reason: ptr("spam")}, ""},
		{"missing duration", auth.TimeoutRequest{Reason: ptr("spam")}, "duration_seconds is required"},
		{"too short", auth.TimeoutRequest{DurationSeconds: ptr[int64](29), Reason: ptr("spam")}, between},
		{"zero", auth.TimeoutRequest{DurationSeconds: ptr[int64](0), Reason: ptr("spam")}, between},
		{"negative", auth.TimeoutRequest{DurationSeconds: ptr[int64](-60), Reason: ptr("spam")}, between},
		{"too long", auth.TimeoutRequest{DurationSeconds: ptr[int64](604801), Reason: ptr("spam")}, between},
		{"huge", auth.TimeoutRequest{DurationSeconds: ptr[int64](1 << 62), Reason: ptr("spam")}, between},
		{"missing reason", auth.TimeoutRequest{DurationSeconds: ptr[int64](60)}, required},
		{"empty reason", auth.TimeoutRequest{DurationSeconds: ptr[int64](60), Reason: ptr("")}, required},
		{"blank reason", auth.TimeoutRequest{DurationSeconds: ptr[int64](60), Reason: ptr(" \t\n ")}, required},
		{"2000 characters", auth.TimeoutRequest{DurationSeconds: ptr[int64](60), Reason: ptr(strings.Repeat("é", 2000))}, ""},
		{"2001 characters", auth.TimeoutRequest{DurationSeconds: ptr[int64](60), Reason: ptr(strings.Repeat("é", 2001))}, tooLong},
		{"not UTF-8", auth.TimeoutRequest{DurationSeconds: ptr[int64](60), Reason: ptr("spam \xff")}, tooLong},
	}
	for _, tc := range timeouts {
		t.Run("timeout "+tc.name, func(t *testing.T) {
			u := newUnit(t, account("mod", auth.RoleModerator), account("target", auth.RoleUser))
			got, err := u.svc.Timeout(context.Background(), mod, "target", tc.req)
			if tc.msg != "" {
				wantErr(t, err, errs.KindInvalid, tc.msg)
				if u.store.writes != 0 || len(u.audit.all()) != 0 {
					t.Fatal("a refused timeout wrote something")
				}
				return
			}
			until := unitEpoch.Add(time.Duration(*tc.req.DurationSeconds) * time.Second)
			if err != nil || got.Status != auth.StatusSuspended || got.TimeoutUntil == nil || !got.TimeoutUntil.Equal(until) ||
				got.TimeoutReason == nil || *got.TimeoutReason != *tc.req.Reason {
				t.Fatalf("timeout = %+v, %v", got, err)
			}
		})
	}
	bans := []struct {
		name string
		req  auth.BanRequest
		msg  string
	}{
		{"reason", auth.BanRequest{Reason: ptr("phishing")}, ""},
		{"missing reason", auth.BanRequest{DeactivateLinks: ptr(true)}, required},
		{"blank reason", auth.BanRequest{Reason: ptr("   ")}, required},
		{"too long", auth.BanRequest{Reason: ptr(strings.Repeat("x", 2001))}, tooLong},
		{"not UTF-8", auth.BanRequest{Reason: ptr("\xc3\x28")}, tooLong},
	}
	for _, tc := range bans {
		t.Run("ban "+tc.name, func(t *testing.T) {
			u := newUnit(t, account("mod", auth.RoleModerator), account("target", auth.RoleUser))
			got, err := u.svc.Ban(context.Background(), mod, "target", tc.req)
			if tc.msg != "" {
				wantErr(t, err, errs.KindInvalid, tc.msg)
				if u.store.writes != 0 || len(u.audit.all()) != 0 || len(u.links.all()) != 0 {
					t.Fatal("a refused ban did something")
				}
				return
			}
			if err != nil || got.User.Status != auth.StatusBanned || got.User.BanReason == nil || *got.User.BanReason != *tc.req.Reason {
				t.Fatalf("ban = %+v, %v", got, err)
			}
		})
	}
	// The reason is kept trimmed.
	u := newUnit(t, account("mod", auth.RoleModerator), account("target", auth.RoleUser))
	if got, err := u.svc.Ban(context.Background(), mod, "target", auth.BanRequest{Reason: ptr("  spam\n")}); err != nil ||
		*got.User.BanReason != "spam" || *u.store.get(t, "target").BanReason != "spam" {
		t.Fatalf("ban with a padded reason = %+v, %v", got, err)
	}
}
