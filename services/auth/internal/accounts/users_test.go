package accounts_test

import (
	"context"
	"strings"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

func TestUserListNeedsModerator(t *testing.T) {
	banned := account("mod", auth.RoleModerator)
	banned.Status = auth.StatusBanned
	for name, tc := range map[string]struct {
		actor  accounts.User
		caller identity.Caller
		msg    string
	}{
		"user":             {account("u", auth.RoleUser), identity.Caller{UserID: "u", Role: auth.RoleUser}, "moderator role required"},
		"anonymous":        {account("u", auth.RoleUser), identity.Anonymous, "moderator role required"},
		"demoted":          {account("u", auth.RoleUser), identity.Caller{UserID: "u", Role: auth.RoleModerator}, "moderator role required"},
		"banned moderator": {banned, identity.Caller{UserID: "mod", Role: auth.RoleModerator}, "account is banned"},
	} {
		u := newUnit(t, tc.actor)
		_, err := u.svc.Users(context.Background(), tc.caller, accounts.UserQuery{})
		if e, ok := errs.As(err); !ok || e.Kind != errs.KindForbidden || e.Message != tc.msg {
			t.Errorf("%s: list = %v", name, err)
		}
		_, err = u.svc.UserCounts(context.Background(), tc.caller)
		if e, ok := errs.As(err); !ok || e.Kind != errs.KindForbidden || e.Message != tc.msg {
			t.Errorf("%s: counts = %v", name, err)
		}
	}
}

func TestParseUserQuery(t *testing.T) {
	cases := []struct {
		query map[string]string
		want  string // "" = accepted
		check func(accounts.UserQuery) bool
	}{
		{map[string]string{}, "", func(q accounts.UserQuery) bool {
			return q.Paging.Page == 1 && q.Paging.PageSize == 20 && q.Filter == (accounts.UserFilter{})
		}},
		{map[string]string{"q": " a.*(b$\\ ", "role": "moderator", "status": "suspended", "page": "2", "page_size": "5"}, "",
			func(q accounts.UserQuery) bool {
				return q.Filter.Contains == "a.*(b$\\" && q.Filter.Role == auth.RoleModerator && q.Filter.Status == auth.StatusSuspended &&
					q.Paging.Page == 2 && q.Paging.PageSize == 5
			}},
		{map[string]string{"q": strings.Repeat("é", 254), "status": "banned", "role": "super_admin"}, "", func(q accounts.UserQuery) bool {
			return len([]rune(q.Filter.Contains)) == 254 && q.Filter.Status == auth.StatusBanned
		}},
		{map[string]string{"status": "active", "role": "user"}, "", func(q accounts.UserQuery) bool {
			return q.Filter.Status == auth.StatusActive && q.Filter.Role == auth.RoleUser
		}},
		{map[string]string{"q": strings.Repeat("a", 255)}, "q must be valid text of at most 254 characters", nil},
		{map[string]string{"q": "ada\xff"}, "q must be valid text of at most 254 characters", nil},
		{map[string]string{"q": "ada\x00"}, "q must not contain control characters", nil},
		{map[string]string{"q": "a\nb"}, "q must not contain control characters", nil},
		{map[string]string{"role": "admin"}, "role must be one of user, moderator, super_admin", nil},
		{map[string]string{"role": "Moderator"}, "role must be one of user, moderator, super_admin", nil},
		{map[string]string{"status": "deleted"}, "status must be one of active, suspended, banned", nil},
		{map[string]string{"status": "all"}, "status must be one of active, suspended, banned", nil},
		{map[string]string{"page": "0"}, "page must be a positive integer", nil},
		{map[string]string{"page_size": "101"}, "page_size must be between 1 and 100", nil},
	}
	for _, tc := range cases {
		q, err := accounts.ParseUserQuery(func(k string) string { return tc.query[k] })
		if tc.want == "" {
			if err != nil || !tc.check(q) {
				t.Errorf("%q: %+v, %v", tc.query, q, err)
			}
			continue
		}
		if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid || e.Message != tc.want {
			t.Errorf("%q: got %v, want 400 %q", tc.query, err, tc.want)
		}
	}
}
