package accounts_test

import (
	"context"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

// A password change needs the current password; it ends every session of the account, the
// caller's too, and gives the caller a fresh one; the new password signs in, the old one
// no longer does. Wrong current passwords count as failed logins.
func TestChangePassword(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ada := e.register(t, "ada@example.com")
	login := func(pw string) (auth.Session, error) {
		return e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: pw})
	}
	other, err := login("correct-horse")
	if err != nil {
		t.Fatal(err)
	}
	mine, err := login("correct-horse")
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.svc.Validate(ctx, mine.Token)
	if err != nil {
		t.Fatal(err)
	}
	as := caller(ada.ID, auth.RoleUser)
	as.SessionID = v.SessionID
	change := func(cur, next string) (auth.Session, error) {
		return e.svc.ChangePassword(ctx, as, auth.PasswordChangeRequest{CurrentPassword: cur, NewPassword: next})
	}
	_, err = change("", "battery-staple")
	wantErr(t, err, errs.KindInvalid, "current_password is required")
	_, err = change("correct-horse", "short")
	wantErr(t, err, errs.KindInvalid, "new_password must be between 8 and 128 characters")
	_, err = change("wrong-horse", "battery-staple")
	wantErr(t, err, errs.KindUnauthenticated, "current password is wrong")
	if n := e.quota.used(quota.ScopeLoginEmail, hexSHA("ada@example.com")); n != 1 {
		t.Fatalf("a wrong current password counted %d failures, want 1", n)
	}
	token := as
	token.TokenID, token.SessionID = "t1", ""
	_, err = e.svc.ChangePassword(ctx, token, auth.PasswordChangeRequest{CurrentPassword: "correct-horse", NewPassword: "battery-staple"})
	wantErr(t, err, errs.KindForbidden, "sessions are managed from a signed-in session, not with an API token")

	fresh, err := change("correct-horse", "battery-staple")
	if err != nil || fresh.Token == "" || fresh.User.ID != ada.ID {
		t.Fatalf("change: %+v %v", fresh, err)
	}
	for name, tok := range map[string]string{"another device's": other.Token, "the caller's old": mine.Token} {
		_, err := e.svc.Validate(ctx, tok)
		wantErr(t, err, errs.KindUnauthenticated, "session expired or invalid")
		_ = name
	}
	if _, err := e.svc.Validate(ctx, fresh.Token); err != nil {
		t.Fatalf("the fresh session: %v", err)
	}
	_, err = login("correct-horse")
	wantErr(t, err, errs.KindUnauthenticated, "invalid email or password")
	if _, err := login("battery-staple"); err != nil {
		t.Fatalf("the new password: %v", err)
	}
	// The old password is no longer the current one.
	fv, _ := e.svc.Validate(ctx, fresh.Token)
	as.SessionID = fv.SessionID
	_, err = change("correct-horse", "another-one")
	wantErr(t, err, errs.KindUnauthenticated, "current password is wrong")
}
