package accounts_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/services/auth/internal/mail"
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
		if _, err := e.svc.Validate(ctx, tok); !errs.IsKind(err, errs.KindUnauthenticated) {
			t.Fatalf("%s session after the change: %v, want it ended", name, err)
		}
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

// outboxMail returns the mail kept for to in the outbox, newest first.
func outboxMail(t *testing.T, e *env, to string) []string {
	t.Helper()
	cur, err := e.db.Collection(mail.Collection).Find(context.Background(), bson.D{{Key: "to", Value: to}},
		options.Find().SetSort(bson.D{{Key: "created_at", Value: -1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		Subject string `bson:"subject"`
		Text    string `bson:"text"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.Subject + "\n" + d.Text
	}
	return out
}

var resetLink = regexp.MustCompile(`https://sho\.rt/#/reset-password\?token=([A-Za-z0-9_-]+)`)

// A reset request mails a single-use link for 30 minutes to an address that has an account,
// and nothing to one that has none, with the same answer; the link sets a new password and
// ends every session; it works once, and not after its 30 minutes.
func TestPasswordReset(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.register(t, "ada@example.com")
	sess, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(email string) error {
		return e.svc.RequestPasswordReset(ctx, caller("", ""), auth.PasswordResetRequest{Email: email})
	}
	if err := ask("nobody@example.com"); err != nil {
		t.Fatalf("an unknown address: %v", err)
	}
	if got := outboxMail(t, e, "nobody@example.com"); len(got) != 0 {
		t.Fatalf("mail to an address without an account: %v", got)
	}
	wantErr(t, ask("not an address"), errs.KindInvalid, "email must be a valid e-mail address")
	if err := ask("Ada@Example.com"); err != nil {
		t.Fatal(err)
	}
	got := outboxMail(t, e, "ada@example.com")
	if len(got) != 2 || !strings.HasPrefix(got[0], "Reset your linkmesh password\n") || !strings.Contains(got[0], "30 minutes") {
		t.Fatalf("reset mail: %v", got)
	}
	m := resetLink.FindStringSubmatch(got[0])
	if m == nil {
		t.Fatalf("no link in %q", got[0])
	}
	token := m[1]
	if n, _ := e.db.Collection("password_resets").CountDocuments(ctx, bson.D{{Key: "_id", Value: token}}); n != 0 {
		t.Fatal("the token itself is stored")
	}
	confirm := func(tok, pw string) error {
		return e.svc.ConfirmPasswordReset(ctx, auth.PasswordResetConfirm{Token: tok, NewPassword: pw})
	}
	wantErr(t, confirm(token, "short"), errs.KindInvalid, "new_password must be between 8 and 128 characters")
	wantErr(t, confirm("made-up", "battery-staple"), errs.KindInvalid, "reset link is invalid, used or expired")
	if err := confirm(token, "battery-staple"); err != nil {
		t.Fatalf("confirm: %v", err)
	}
	_, err = e.svc.Validate(ctx, sess.Token)
	wantErr(t, err, errs.KindUnauthenticated, "session expired or invalid")
	if _, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "battery-staple"}); err != nil {
		t.Fatalf("the new password: %v", err)
	}
	wantErr(t, confirm(token, "another-pass"), errs.KindInvalid, "reset link is invalid, used or expired")

	// A link older than 30 minutes no longer works.
	if err := ask("ada@example.com"); err != nil {
		t.Fatal(err)
	}
	late := resetLink.FindStringSubmatch(outboxMail(t, e, "ada@example.com")[0])[1]
	e.clock.Advance(31 * time.Minute)
	wantErr(t, confirm(late, "another-pass"), errs.KindInvalid, "reset link is invalid, used or expired")

	// Requests per address are bounded: nobody floods an inbox.
	e.quota.limits[quota.ScopeResetEmail] = 2
	wantErr(t, ask("ada@example.com"), errs.KindTooMany, "too many password reset requests")
}

var verifyLink = regexp.MustCompile(`https://sho\.rt/#/verify-email\?token=([A-Za-z0-9_-]+)`)

// verifyToken is the token of the newest verification mail to to.
func verifyToken(t *testing.T, e *env, to string) string {
	t.Helper()
	for _, m := range outboxMail(t, e, to) {
		if strings.HasPrefix(m, "Verify your e-mail address for linkmesh\n") {
			if v := verifyLink.FindStringSubmatch(m); v != nil {
				return v[1]
			}
		}
	}
	t.Fatalf("no verification mail to %s", to)
	return ""
}

// A password account starts unverified with a link mailed to it; the link verifies it once.
// Registering the address again within 24 hours answers like a new registration but signs
// nobody in and changes nothing, and mails the link again; after 24 hours the unverified
// account gives the address up. A verified address is a 409. Resending is bounded.
func TestEmailVerification(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ada := e.register(t, "ada@example.com")
	if ada.EmailVerified {
		t.Fatal("a new password account is verified")
	}
	// Signed in while unverified: no API token (a credential that would outlive the owner's
	// verification), and the session ends with the verification.
	before, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"})
	if err != nil {
		t.Fatal(err)
	}
	unverified := caller(ada.ID, auth.RoleUser)
	unverified.SessionID, unverified.EmailUnverified = "s", true
	_, err = e.svc.CreateToken(ctx, unverified, auth.TokenCreateRequest{Name: ptr("ci"), Scopes: &[]string{auth.ScopeLinksRead}})
	wantErr(t, err, errs.KindForbidden, "verify your e-mail address first")
	token := verifyToken(t, e, "ada@example.com")
	_, err = e.svc.VerifyEmail(ctx, auth.VerifyEmailRequest{Token: "made-up"})
	wantErr(t, err, errs.KindInvalid, "verification link is invalid, used or expired")
	u, err := e.svc.VerifyEmail(ctx, auth.VerifyEmailRequest{Token: token})
	if err != nil || !u.EmailVerified || u.ID != ada.ID {
		t.Fatalf("verify: %+v %v", u, err)
	}
	_, err = e.svc.Validate(ctx, before.Token)
	wantErr(t, err, errs.KindUnauthenticated, "session expired or invalid")
	_, err = e.svc.VerifyEmail(ctx, auth.VerifyEmailRequest{Token: token})
	wantErr(t, err, errs.KindInvalid, "verification link is invalid, used or expired")
	reg := func(email, pw string) (auth.Session, error) {
		c := caller("", "")
		c.IPHash = fmt.Sprintf("%064x", len(pw))
		return e.svc.Register(ctx, c, auth.RegisterRequest{Email: email, Password: pw, FirstName: "Eve", LastName: "X"})
	}
	_, err = reg("ada@example.com", "another-horse")
	wantErr(t, err, errs.KindConflict, "email is already registered")
	wantErr(t, e.svc.ResendVerification(ctx, withSession(caller(ada.ID, auth.RoleUser))), errs.KindConflict, "e-mail address is already verified")

	// bob registers; eve registers bob's address again within the day.
	bob := e.register(t, "bob@example.com")
	again, err := reg("bob@example.com", "eves-password")
	if err != nil || again.Token == "" || again.User.ID == bob.ID || again.User.Email != "bob@example.com" || again.User.EmailVerified {
		t.Fatalf("registering an unverified address again: %+v %v", again.User, err)
	}
	if _, err := e.svc.Validate(ctx, again.Token); err == nil {
		t.Fatal("registering an unverified address again signed in to it")
	}
	if _, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "bob@example.com", Password: "eves-password"}); err == nil {
		t.Fatal("registering an unverified address again changed its password")
	}
	if n := len(outboxMail(t, e, "bob@example.com")); n != 2 {
		t.Fatalf("%d mails to bob, want the verification twice", n)
	}
	// A day later the unverified account gives its address up.
	e.clock.Advance(verifyDay + time.Minute)
	fresh, err := reg("bob@example.com", "eves-password")
	if err != nil || fresh.User.ID == bob.ID {
		t.Fatalf("registering a stale unverified address: %+v %v", fresh.User, err)
	}
	if _, err := e.store.UserByID(ctx, bob.ID); err == nil {
		t.Fatal("the stale unverified account is still there")
	}
	if _, err := e.svc.Validate(ctx, fresh.Token); err != nil {
		t.Fatalf("the new registration's session: %v", err)
	}

	// Resending: three an hour.
	carol := e.register(t, "carol@example.com")
	e.quota.limits[quota.ScopeVerifyResend] = 3
	for range 3 {
		if err := e.svc.ResendVerification(ctx, withSession(caller(carol.ID, auth.RoleUser))); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, e.svc.ResendVerification(ctx, withSession(caller(carol.ID, auth.RoleUser))), errs.KindTooMany, "too many verification mails; try again later")
	if n := len(outboxMail(t, e, "carol@example.com")); n != 4 {
		t.Fatalf("%d mails to carol, want 4", n)
	}
}

const verifyDay = 24 * time.Hour

// withSession is c calling from a session (the routes of one's own account need one).
func withSession(c identity.Caller) identity.Caller {
	c.SessionID = "s"
	return c
}
