package accounts

import (
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

func TestRoleChangeRules(t *testing.T) {
	super := identity.Caller{UserID: "admin", Role: auth.RoleSuperAdmin, Status: auth.StatusActive}
	cases := []struct {
		name   string
		caller identity.Caller
		target string
		role   string
		kind   errs.Kind
		msg    string // "" = allowed
	}{
		{"super admin promotes", super, "u1", auth.RoleModerator, 0, ""},
		{"super admin makes a super admin", super, "u1", auth.RoleSuperAdmin, 0, ""},
		{"super admin demotes", super, "u1", auth.RoleUser, 0, ""},
		{"moderator", identity.Caller{UserID: "m", Role: auth.RoleModerator}, "u1", auth.RoleUser, errs.KindForbidden, "super admin role required"},
		{"user", identity.Caller{UserID: "u", Role: auth.RoleUser}, "u1", auth.RoleModerator, errs.KindForbidden, "super admin role required"},
		{"anonymous", identity.Anonymous, "u1", auth.RoleUser, errs.KindForbidden, "super admin role required"},
		{"non-admin with bad role still 403", identity.Caller{UserID: "u", Role: auth.RoleUser}, "u1", "god", errs.KindForbidden, "super admin role required"},
		{"unknown role", super, "u1", "admin", errs.KindInvalid, "role must be one of user, moderator, super_admin"},
		{"empty role", super, "u1", "", errs.KindInvalid, "role must be one of user, moderator, super_admin"},
		{"role case matters", super, "u1", "Moderator", errs.KindInvalid, "role must be one of user, moderator, super_admin"},
		{"own account", super, "admin", auth.RoleUser, errs.KindInvalid, "you cannot change your own role"},
		{"own account, same role", super, "admin", auth.RoleSuperAdmin, errs.KindInvalid, "you cannot change your own role"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckRoleChange(tc.caller, tc.target, tc.role)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if e, ok := errs.As(err); !ok || e.Kind != tc.kind || e.Message != tc.msg {
				t.Fatalf("got %v, want %v %q", err, tc.kind, tc.msg)
			}
		})
	}
}

// Only an active super admin counts: a banned or timed-out one keeps no one in charge.
func TestActiveSuperAdmin(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	later, earlier := now.Add(time.Minute), now.Add(-time.Minute)
	cases := []struct {
		u    User
		want bool
	}{
		{User{Role: auth.RoleSuperAdmin, Status: auth.StatusActive}, true},
		{User{Role: auth.RoleSuperAdmin, Status: auth.StatusActive, TimeoutUntil: &earlier}, true},
		{User{Role: auth.RoleSuperAdmin, Status: auth.StatusActive, TimeoutUntil: &later}, false},
		{User{Role: auth.RoleSuperAdmin, Status: auth.StatusBanned}, false},
		{User{Role: auth.RoleModerator, Status: auth.StatusActive}, false},
	}
	for i, tc := range cases {
		if got := tc.u.activeSuperAdmin(now); got != tc.want {
			t.Errorf("case %d: %v, want %v", i, got, tc.want)
		}
	}
	if e, ok := errs.As(lastSuperAdmin("ban")); !ok || e.Kind != errs.KindConflict || e.Message != "cannot ban the last active super admin" {
		t.Errorf("lastSuperAdmin = %v", e)
	}
}

func TestParseRecordQuery(t *testing.T) {
	cases := []struct {
		query map[string]string
		want  string // "" = accepted
		check func(RecordQuery) bool
	}{
		{map[string]string{}, "", func(q RecordQuery) bool {
			return q.Paging.Page == 1 && q.Paging.PageSize == 20 && q.Filter.Success == nil
		}},
		{map[string]string{"page": "3", "page_size": "100"}, "", func(q RecordQuery) bool { return q.Paging.Page == 3 && q.Paging.PageSize == 100 }},
		{map[string]string{"email": " Ada@Example.com ", "user_id": "u1"}, "", func(q RecordQuery) bool {
			return q.Filter.Email == "ada@example.com" && q.Filter.UserID == "u1"
		}},
		{map[string]string{"success": "true"}, "", func(q RecordQuery) bool { return q.Filter.Success != nil && *q.Filter.Success }},
		{map[string]string{"success": "false"}, "", func(q RecordQuery) bool { return q.Filter.Success != nil && !*q.Filter.Success }},
		{map[string]string{"success": "yes"}, "success must be true or false", nil},
		{map[string]string{"success": "TRUE"}, "success must be true or false", nil},
		{map[string]string{"page": "0"}, "page must be a positive integer", nil},
		{map[string]string{"page": "-1"}, "page must be a positive integer", nil},
		{map[string]string{"page": "x"}, "page must be a positive integer", nil},
		{map[string]string{"page": "99999999999999999999"}, "page must be a positive integer", nil},
		{map[string]string{"page_size": "101"}, "page_size must be between 1 and 100", nil},
		{map[string]string{"page_size": "0"}, "page_size must be between 1 and 100", nil},
		{map[string]string{"page_size": "1.5"}, "page_size must be between 1 and 100", nil},
	}
	for _, tc := range cases {
		q, err := ParseRecordQuery(func(k string) string { return tc.query[k] })
		if tc.want == "" {
			if err != nil || !tc.check(q) {
				t.Errorf("%v: %+v, %v", tc.query, q, err)
			}
			continue
		}
		if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid || e.Message != tc.want {
			t.Errorf("%v: got %v, want 400 %q", tc.query, err, tc.want)
		}
	}
}

func TestIPHashOnlyKeepsHashes(t *testing.T) {
	hash := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for in, want := range map[string]string{
		hash: hash, "": "", "203.0.113.7": "", "2001:db8::1": "", hash + "0": "", hash[:63] + "g": "",
	} {
		if got := ipHash(identity.Caller{IPHash: in}); got != want {
			t.Errorf("ipHash(%q) = %q, want %q", in, got, want)
		}
	}
}
