package accounts_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/paging"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// rawUser reads an account as stored, every field; printed, its fields come in name order,
// whatever order the server keeps them in.
func rawUser(t *testing.T, e *env, id string) map[string]any {
	t.Helper()
	var d map[string]any
	if err := e.db.Collection("users").FindOne(context.Background(), bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
		t.Fatalf("read user %s: %v", id, err)
	}
	return d
}

// A timeout, a ban with its links and an unban of one user on the real store, seen through
// the list and the counts after each step.
func TestModerationRoundTrip(t *testing.T) {
	e := newEnv(t)
	ctx := actingFor("mod-token")
	admin := e.superAdmin(t, "admin@example.com")
	mod := e.register(t, "mod@example.com")
	if _, err := e.svc.SetRole(ctx, caller(admin.ID, auth.RoleSuperAdmin), mod.ID, auth.RoleModerator); err != nil {
		t.Fatal(err)
	}
	ada := e.register(t, "ada@example.com")
	e.register(t, "bob@example.com")
	asMod := caller(mod.ID, auth.RoleModerator)
	e.links.setEnabled(ada.ID, 3)

	counts := func(want string) {
		t.Helper()
		n, err := e.svc.UserCounts(ctx, asMod)
		if got := fmt.Sprintf("%d/%d/%d/%d", n.Total, n.Active, n.Suspended, n.Banned); err != nil || got != want {
			t.Fatalf("counts = %s, %v; want total/active/suspended/banned %s", got, err, want)
		}
	}
	list := func(status string) []string {
		t.Helper()
		res, err := e.svc.Users(ctx, asMod, accounts.UserQuery{Filter: accounts.UserFilter{Status: status},
			Paging: paging.Page{Page: 1, PageSize: 20}})
		if err != nil {
			t.Fatal(err)
		}
		var emails []string
		for _, u := range res.Users {
			if status != "" && u.Status != status {
				t.Fatalf("listed %s as %s in the %s list", u.Email, u.Status, status)
			}
			emails = append(emails, u.Email)
		}
		if res.Total != int64(len(emails)) || res.Page != 1 || res.PageSize != 20 {
			t.Fatalf("list %q = %+v", status, res)
		}
		return emails
	}
	counts("4/4/0/0")
	if got := fmt.Sprint(list("")); got != "[bob@example.com ada@example.com mod@example.com admin@example.com]" {
		t.Fatalf("list = %s", got)
	}

	e.clock.Advance(time.Minute)
	u, err := e.svc.Timeout(ctx, asMod, ada.ID, auth.TimeoutRequest{DurationSeconds: ptr[int64](600), Reason: ptr("cool off")})
	until := e.clock.Now().Add(10 * time.Minute)
	if err != nil || u.Status != auth.StatusSuspended || !u.TimeoutUntil.Equal(until) || *u.TimeoutReason != "cool off" {
		t.Fatalf("timeout = %+v, %v", u, err)
	}
	counts("4/3/1/0")
	if got := fmt.Sprint(list(auth.StatusSuspended)); got != "[ada@example.com]" {
		t.Fatalf("suspended = %s", got)
	}
	_, err = e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"})
	wantErr(t, err, errs.KindForbidden, "account is suspended until "+until.Format(time.RFC3339))

	res, err := e.svc.Ban(ctx, asMod, ada.ID, auth.BanRequest{Reason: ptr("phishing"), DeactivateLinks: ptr(true)})
	if err != nil || res.User.Status != auth.StatusBanned || *res.User.BanReason != "phishing" || res.LinksDisabled != 3 ||
		!res.User.TimeoutUntil.Equal(until) {
		t.Fatalf("ban = %+v, %v", res, err)
	}
	counts("4/3/0/1")
	if got := fmt.Sprint(list(auth.StatusBanned)); got != "[ada@example.com]" {
		t.Fatalf("banned = %s", got)
	}

	u, err = e.svc.Unban(ctx, asMod, ada.ID)
	if err != nil || u.Status != auth.StatusActive || u.BanReason != nil || u.TimeoutUntil != nil || u.TimeoutReason != nil {
		t.Fatalf("unban = %+v, %v", u, err)
	}
	raw := rawUser(t, e, ada.ID)
	for _, f := range []string{"ban_reason", "timeout_until", "timeout_reason"} {
		if _, ok := raw[f]; ok {
			t.Fatalf("unban left %s stored: %v", f, raw)
		}
	}
	counts("4/4/0/0")
	if _, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"}); err != nil {
		t.Fatalf("login after the unban: %v", err)
	}
	var actions []string
	for _, a := range e.audit.all() {
		actions = append(actions, a.Action)
		if a.Token != "mod-token" {
			t.Fatalf("audit entry without the caller's token: %+v", a)
		}
	}
	if got := fmt.Sprint(actions); got != "[user.role user.timeout user.ban user.unban]" {
		t.Fatalf("audit actions = %s", got)
	}
	if calls := e.links.all(); len(calls) != 1 || calls[0].Owner != ada.ID || calls[0].Reason != "phishing" {
		t.Fatalf("link disables = %+v", calls)
	}
}

// On the real store, an action whose entry cannot be written leaves the stored account
// exactly as it was, field for field.
func TestModerationUndoOnTheStore(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.superAdmin(t, "admin@example.com")
	ada := e.register(t, "ada@example.com")
	as := caller(admin.ID, auth.RoleSuperAdmin)
	if _, err := e.svc.Timeout(ctx, as, ada.ID, auth.TimeoutRequest{DurationSeconds: ptr[int64](60), Reason: ptr("first")}); err != nil {
		t.Fatal(err)
	}
	e.audit.setFail(errAuditDown)
	for name, act := range map[string]func() error{
		"timeout": func() error {
			_, err := e.svc.Timeout(ctx, as, ada.ID, auth.TimeoutRequest{DurationSeconds: ptr[int64](3600), Reason: ptr("second")})
			return err
		},
		"ban": func() error {
			_, err := e.svc.Ban(ctx, as, ada.ID, auth.BanRequest{Reason: ptr("spam"), DeactivateLinks: ptr(true)})
			return err
		},
		"unban": func() error { _, err := e.svc.Unban(ctx, as, ada.ID); return err },
	} {
		before := rawUser(t, e, ada.ID)
		e.clock.Advance(time.Second)
		if err := act(); !errors.Is(err, errAuditDown) {
			t.Fatalf("%s = %v; want the audit failure", name, err)
		}
		if after := rawUser(t, e, ada.ID); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("%s not undone:\n got %v\nwant %v", name, after, before)
		}
	}
	if n := len(e.audit.byAction(moderation.AuditUserTimeout)); n != 1 || len(e.links.all()) != 0 {
		t.Fatalf("%d timeout entries, %d link disables", n, len(e.links.all()))
	}
}

// The list's q is a literal, case-insensitive substring over the service too, and pages.
func TestUserListThroughTheService(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.superAdmin(t, "admin@example.com")
	for i := range 5 {
		e.register(t, fmt.Sprintf("user%d@example.com", i))
	}
	e.register(t, "dot.star@example.com")
	get := func(q map[string]string) auth.UserList {
		t.Helper()
		uq, err := accounts.ParseUserQuery(func(k string) string { return q[k] })
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.svc.Users(ctx, caller(admin.ID, auth.RoleSuperAdmin), uq)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := get(map[string]string{"q": "T.S"}); res.Total != 1 || res.Users[0].Email != "dot.star@example.com" {
		t.Fatalf("q T.S = %+v", res)
	}
	if res := get(map[string]string{"q": ".*"}); res.Total != 0 || res.Users == nil {
		t.Fatalf("q .* = %+v; want an empty list", res)
	}
	res := get(map[string]string{"q": "USER", "page": "2", "page_size": "2"})
	if res.Total != 5 || len(res.Users) != 2 || res.Users[0].Email != "user2@example.com" || res.Page != 2 || res.PageSize != 2 {
		t.Fatalf("page 2 = %+v", res)
	}
	if res := get(map[string]string{"role": "super_admin"}); res.Total != 1 || res.Users[0].ID != admin.ID || res.Users[0].Role != auth.RoleSuperAdmin {
		t.Fatalf("super admins = %+v", res)
	}
}
