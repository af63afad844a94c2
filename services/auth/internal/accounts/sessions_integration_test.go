package accounts_test

import (
	"context"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// A user lists their sessions (newest first, the current one marked, with the sign-in's
// User-Agent and when each was last used), ends one, then every other; another user's
// session is a 404, and an API token manages no sessions.
func TestSessionsListAndRevoke(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ada := e.register(t, "ada@example.com") // the registration's session, first
	signIn := func(ua string) (string, auth.Validated) {
		c := caller("", "")
		c.UserAgent = ua
		e.clock.Advance(time.Second)
		s, err := e.svc.Login(ctx, c, auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"})
		if err != nil {
			t.Fatal(err)
		}
		v, err := e.svc.Validate(ctx, s.Token)
		if err != nil || v.SessionID == "" || v.User.ID != ada.ID {
			t.Fatalf("validate: %+v %v", v, err)
		}
		return s.Token, v
	}
	phoneTok, phone := signIn("Phone/1.0")
	laptopTok, laptop := signIn("Laptop/2.0")
	as := func(v auth.Validated) identity.Caller {
		c := caller(ada.ID, auth.RoleUser)
		c.SessionID = v.SessionID
		return c
	}
	list, err := e.svc.Sessions(ctx, as(laptop))
	if err != nil || len(list.Sessions) != 3 {
		t.Fatalf("sessions: %+v %v", list, err)
	}
	got := list.Sessions
	if got[0].ID != laptop.SessionID || !got[0].Current || got[0].UserAgent != "Laptop/2.0" ||
		got[1].ID != phone.SessionID || got[1].Current || got[1].UserAgent != "Phone/1.0" || got[2].Current ||
		!got[0].CreatedAt.After(got[1].CreatedAt) {
		t.Fatalf("sessions, newest first: %+v", got)
	}
	// Validation recorded its use in the background.
	deadline := time.Now().Add(5 * time.Second)
	for {
		list, _ = e.svc.Sessions(ctx, as(laptop))
		if list.Sessions[0].LastSeenAt != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if at := list.Sessions[0].LastSeenAt; at == nil || !at.Equal(e.clock.Now()) {
		t.Fatalf("last_seen_at %v, want %v", at, e.clock.Now())
	}
	for _, s := range list.Sessions {
		if len(s.ID) != 24 || s.ID == auth.RevokeOthers {
			t.Fatalf("session id %q", s.ID)
		}
	}

	// Another user cannot see or end ada's sessions.
	bob := e.register(t, "bob@example.com")
	bobCaller := caller(bob.ID, auth.RoleUser)
	bobCaller.SessionID = "whatever"
	wantErr(t, e.svc.RevokeSession(ctx, bobCaller, phone.SessionID), errs.KindNotFound, "session not found")
	if _, err := e.svc.Validate(ctx, phoneTok); err != nil {
		t.Fatalf("bob ended ada's session: %v", err)
	}
	// An API token manages no sessions.
	tokenCaller := caller(ada.ID, auth.RoleUser)
	tokenCaller.TokenID = "t1"
	_, err = e.svc.Sessions(ctx, tokenCaller)
	wantErr(t, err, errs.KindForbidden, "sessions are managed from a signed-in session, not with an API token")

	// End the phone's session: its token no longer validates; the laptop's does.
	if err := e.svc.RevokeSession(ctx, as(laptop), phone.SessionID); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Validate(ctx, phoneTok)
	wantErr(t, err, errs.KindUnauthenticated, "session expired or invalid")
	wantErr(t, e.svc.RevokeSession(ctx, as(laptop), phone.SessionID), errs.KindNotFound, "session not found")
	// Every other one: only the laptop's is left.
	if err := e.svc.RevokeSession(ctx, as(laptop), auth.RevokeOthers); err != nil {
		t.Fatal(err)
	}
	list, err = e.svc.Sessions(ctx, as(laptop))
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].ID != laptop.SessionID {
		t.Fatalf("after ending the others: %+v %v", list, err)
	}
	if _, err := e.svc.Validate(ctx, laptopTok); err != nil {
		t.Fatalf("the current session ended with the others: %v", err)
	}
	if err := e.svc.RevokeSession(ctx, as(laptop), auth.RevokeOthers); err != nil {
		t.Fatalf("ending the others when there are none: %v", err)
	}
}

// The export holds the account, the links the link service gives, the tokens' and sessions'
// metadata; each reads a year of analytics per link, so an account has a few an hour.
func TestExportIsBounded(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ada := e.register(t, "ada@example.com")
	s, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.svc.Validate(ctx, s.Token)
	if err != nil {
		t.Fatal(err)
	}
	as := caller(ada.ID, auth.RoleUser)
	as.SessionID = v.SessionID
	e.quota.limits[quota.ScopeExport] = 1
	ex, err := e.svc.Export(ctx, as)
	if err != nil || ex.Account.ID != ada.ID || len(ex.Links) != 1 || ex.Links[0].Link.ShortCode != "abc1234" ||
		len(ex.Sessions) != 2 || ex.Tokens == nil {
		t.Fatalf("export: %+v %v", ex, err)
	}
	_, err = e.svc.Export(ctx, as)
	wantErr(t, err, errs.KindTooMany, "too many exports; try again later")
}
