package accounts_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// An action whose audit entry cannot be written does not stand: the target is back to
// exactly what it was, absent fields and updated_at included, and the failure is returned.
func TestModerationWithoutAuditEntryIsUndone(t *testing.T) {
	expired := account("target", auth.RoleUser) // a timeout that ended long ago, reason kept
	expired.TimeoutUntil, expired.TimeoutReason = ptr(unitEpoch.Add(-24*time.Hour)), ptr("old")
	running := account("target", auth.RoleUser)
	running.TimeoutUntil, running.TimeoutReason = ptr(unitEpoch.Add(time.Hour)), ptr("cool off")
	banned := startingPoint("unban", account("target", auth.RoleUser))
	mod := identity.Caller{UserID: "mod", Role: auth.RoleModerator}
	cases := []struct {
		name   string
		target accounts.User
		run    func(u *unit) error
	}{
		{"timeout over an ended one", expired, func(u *unit) error {
			_, err := u.svc.Timeout(context.Background(), mod, "target", auth.TimeoutRequest{DurationSeconds: ptr[int64](60), Reason: ptr("spam")})
			return err
		}},
		{"timeout over a running one", running, func(u *unit) error {
			_, err := u.svc.Timeout(context.Background(), mod, "target", auth.TimeoutRequest{DurationSeconds: ptr[int64](60), Reason: ptr("spam")})
			return err
		}},
		{"ban of a suspended user, links asked", running, func(u *unit) error {
			_, err := u.svc.Ban(context.Background(), mod, "target", auth.BanRequest{Reason: ptr("spam"), DeactivateLinks: ptr(true)})
			return err
		}},
		{"ban again", banned, func(u *unit) error {
			_, err := u.svc.Ban(context.Background(), mod, "target", auth.BanRequest{Reason: ptr("worse")})
			return err
		}},
		{"unban", banned, func(u *unit) error { _, err := u.svc.Unban(context.Background(), mod, "target"); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := newUnit(t, account("mod", auth.RoleModerator), tc.target)
			u.links.setEnabled("target", 4)
			u.audit.setFail(errAuditDown)
			before := u.store.get(t, "target")
			err := tc.run(u)
			if !errors.Is(err, errAuditDown) {
				t.Fatalf("err = %v; want the audit failure", err)
			}
			if after := u.store.get(t, "target"); !sameUser(after, before) {
				t.Fatalf("not restored:\n got %+v\nwant %+v", after, before)
			}
			if u.store.writes != 2 {
				t.Fatalf("%d writes; want the action and its undo", u.store.writes)
			}
			if calls := u.links.all(); len(calls) != 0 {
				t.Fatalf("links disabled for an unrecorded ban: %+v", calls)
			}
		})
	}
}

// A role change whose audit entry cannot be written is undone as well.
func TestRoleChangeWithoutAuditEntryIsUndone(t *testing.T) {
	u := newUnit(t, account("root", auth.RoleSuperAdmin), account("target", auth.RoleUser))
	u.audit.setFail(errAuditDown)
	_, err := u.svc.SetRole(context.Background(), identity.Caller{UserID: "root", Role: auth.RoleSuperAdmin}, "target", auth.RoleModerator)
	if !errors.Is(err, errAuditDown) {
		t.Fatalf("err = %v; want the audit failure", err)
	}
	if got := u.store.get(t, "target"); got.Role != auth.RoleUser || u.store.writes != 2 {
		t.Fatalf("role %s after %d writes; want user restored", got.Role, u.store.writes)
	}
}

func TestBanDisablesLinksOnlyWhenAsked(t *testing.T) {
	mod := identity.Caller{UserID: "mod", Role: auth.RoleModerator}
	ctx := actingFor("mod-token")
	u := newUnit(t, account("mod", auth.RoleModerator), account("target", auth.RoleUser))
	u.links.setEnabled("target", 7)
	for _, deactivate := range []*bool{nil, ptr(false)} {
		res, err := u.svc.Ban(ctx, mod, "target", auth.BanRequest{Reason: ptr("spam"), DeactivateLinks: deactivate})
		if err != nil || res.LinksDisabled != 0 || res.User.Status != auth.StatusBanned {
			t.Fatalf("ban without deactivate_links = %+v, %v", res, err)
		}
	}
	if calls := u.links.all(); len(calls) != 0 {
		t.Fatalf("links disabled without being asked: %+v", calls)
	}
	res, err := u.svc.Ban(ctx, mod, "target", auth.BanRequest{Reason: ptr("phishing"), DeactivateLinks: ptr(true)})
	if err != nil || res.LinksDisabled != 7 || res.User.Status != auth.StatusBanned || *res.User.BanReason != "phishing" {
		t.Fatalf("ban with deactivate_links = %+v, %v", res, err)
	}
	calls := u.links.all()
	if len(calls) != 1 || calls[0] != (disableCall{Owner: "target", Reason: "phishing", Token: "mod-token"}) {
		t.Fatalf("disable calls = %+v", calls)
	}
	// Banning again re-runs the disable, which counts only what is left.
	u.links.setEnabled("target", 2)
	if res, err := u.svc.Ban(ctx, mod, "target", auth.BanRequest{Reason: ptr("phishing"), DeactivateLinks: ptr(true)}); err != nil || res.LinksDisabled != 2 {
		t.Fatalf("second ban = %+v, %v", res, err)
	}
	if res, err := u.svc.Ban(ctx, mod, "target", auth.BanRequest{Reason: ptr("phishing"), DeactivateLinks: ptr(true)}); err != nil || res.LinksDisabled != 0 {
		t.Fatalf("third ban = %+v, %v", res, err)
	}
	if n := len(u.audit.byAction(moderation.AuditUserBan)); n != 5 {
		t.Fatalf("%d ban entries; want one per ban", n)
	}

	// The link service failing: the ban stands and is recorded; the answer says the links
	// are not disabled and how to retry.
	u = newUnit(t, account("mod", auth.RoleModerator), account("target", auth.RoleUser))
	u.links.setFail(errs.Unavailable("link service unavailable", errors.New("connection refused")))
	_, err = u.svc.Ban(ctx, mod, "target", auth.BanRequest{Reason: ptr("spam"), DeactivateLinks: ptr(true)})
	wantErr(t, err, errs.KindUnavailable, "the user is banned, but their links could not be disabled; ban again to retry")
	if got := u.store.get(t, "target"); got.Status != auth.StatusBanned || len(u.audit.all()) != 1 {
		t.Fatalf("after a failed link disable: %+v, %d entries", got, len(u.audit.all()))
	}
}

// Each action's entry carries its detail and the caller's token; ids are fresh.
func TestModerationAuditDetails(t *testing.T) {
	mod := identity.Caller{UserID: "mod", Role: auth.RoleModerator}
	ctx := actingFor("mod-token")
	u := newUnit(t, account("mod", auth.RoleModerator), account("target", auth.RoleUser))
	if _, err := u.svc.Timeout(ctx, mod, "target", auth.TimeoutRequest{DurationSeconds: ptr[int64](90), Reason: ptr("spam")}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.svc.Ban(ctx, mod, "target", auth.BanRequest{Reason: ptr("phishing"), DeactivateLinks: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.svc.Unban(ctx, mod, "target"); err != nil {
		t.Fatal(err)
	}
	entries := u.audit.all()
	want := []string{
		fmt.Sprintf("user.timeout map[duration_seconds:90 reason:spam timeout_until:%v]", unitEpoch.Add(90*time.Second)),
		"user.ban map[deactivate_links:true reason:phishing]",
		"user.unban map[]",
	}
	if len(entries) != len(want) {
		t.Fatalf("entries = %+v", entries)
	}
	ids := map[string]bool{}
	for i, e := range entries {
		if got := e.Action + " " + fmt.Sprint(e.Detail); got != want[i] || e.Token != "mod-token" || e.TargetID != "target" || e.Detail == nil {
			t.Errorf("entry %d = %q (token %q); want %q", i, got, e.Token, want[i])
		}
		ids[e.ID] = true
	}
	if len(ids) != 3 || ids[""] {
		t.Fatalf("ids are not fresh: %v", ids)
	}
}

func TestModerationEdgeCases(t *testing.T) {
	mod := identity.Caller{UserID: "mod", Role: auth.RoleModerator}
	ctx := context.Background()

	// A banned user cannot be timed out: the ban blocks more, and lifting it lifts both.
	banned := startingPoint("unban", account("target", auth.RoleUser))
	u := newUnit(t, account("mod", auth.RoleModerator), banned)
	_, err := u.svc.Timeout(ctx, mod, "target", auth.TimeoutRequest{DurationSeconds: ptr[int64](60), Reason: ptr("spam")})
	wantErr(t, err, errs.KindConflict, "user is banned")

	// Unbanning a user with neither ban nor timeout changes and records nothing.
	u = newUnit(t, account("mod", auth.RoleModerator), account("target", auth.RoleUser))
	got, err := u.svc.Unban(ctx, mod, "target")
	if err != nil || got.Status != auth.StatusActive || u.store.writes != 0 || len(u.audit.all()) != 0 {
		t.Fatalf("unban of an active user = %+v, %v; %d writes", got, err, u.store.writes)
	}
	// An ended timeout still has fields to clear.
	ended := account("target", auth.RoleUser)
	ended.TimeoutUntil, ended.TimeoutReason = ptr(unitEpoch.Add(-time.Minute)), ptr("old")
	u = newUnit(t, account("mod", auth.RoleModerator), ended)
	if got, err := u.svc.Unban(ctx, mod, "target"); err != nil || got.TimeoutUntil != nil || got.TimeoutReason != nil ||
		len(u.audit.all()) != 1 {
		t.Fatalf("unban after an ended timeout = %+v, %v", got, err)
	}
	// Unbanning clears ban and timeout alike.
	u = newUnit(t, account("mod", auth.RoleModerator), banned)
	got, err = u.svc.Unban(ctx, mod, "target")
	stored := u.store.get(t, "target")
	if err != nil || got.Status != auth.StatusActive || got.BanReason != nil || got.TimeoutUntil != nil || got.TimeoutReason != nil ||
		stored.Standing() != (accounts.Standing{Status: auth.StatusActive}) {
		t.Fatalf("unban = %+v, %v; stored %+v", got, err, stored)
	}

	// Another moderator's write between our read and our write: ours is refused, not merged.
	u = newUnit(t, account("mod", auth.RoleModerator), account("target", auth.RoleUser))
	u.store.beforeStanding = func(m *memStore) {
		m.mu.Lock()
		defer m.mu.Unlock()
		v := m.users["target"]
		v.Status, v.BanReason = auth.StatusBanned, ptr("other moderator")
		m.users["target"] = v
	}
	_, err = u.svc.Timeout(ctx, mod, "target", auth.TimeoutRequest{DurationSeconds: ptr[int64](60), Reason: ptr("spam")})
	wantErr(t, err, errs.KindConflict, "the user was changed at the same time; try again")
	if got := u.store.get(t, "target"); got.TimeoutUntil != nil || *got.BanReason != "other moderator" || len(u.audit.all()) != 0 {
		t.Fatalf("after the conflict: %+v", got)
	}
}
