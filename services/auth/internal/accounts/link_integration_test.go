package accounts_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
)

const victimEmail = "victim@example.com"

var victimToken = fakeIDP{"victim-token": {Subject: "sub-victim", Email: "Victim@Example.com", EmailVerified: true,
	GivenName: "Vic", FamilyName: "Tim"}}

// An attacker registered the victim's address before the victim ever came, and keeps a
// password and a session. The victim's first identity provider login links the account and
// takes it over: the attacker's session and password end, even a password login that was
// in flight while the link happened. Its rehash (the second case) cannot bring the password
// back either.
func TestLinkingEndsThePreRegisteredAccess(t *testing.T) {
	cases := []struct {
		name          string
		attackerCost  uint32 // argon2 memory of the attacker's replica; ≠ 64 makes it rehash
		racingAttempt bool
	}{
		{"no login in flight", 64, false},
		{"a password login in flight", 64, true},
		{"a password login in flight that rehashes", 128, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			anon := caller("", "")
			first, err := e.svc.Register(ctx, anon, auth.RegisterRequest{Email: victimEmail, Password: "attacker-horse",
				FirstName: "Mal", LastName: "Lory"})
			if err != nil {
				t.Fatal(err)
			}
			victimSvc := e.service(t, withIDP(victimToken))
			hooks := &hookStore{Store: e.store}
			attackerSvc := e.service(t, withStore(hooks), withHasher(mustHasher(t, tc.attackerCost)))
			var victim auth.Session
			link := func() {
				var err error
				if victim, err = victimSvc.Google(ctx, anon, auth.GoogleRequest{IDToken: "victim-token"}); err != nil {
					t.Errorf("the victim's google login: %v", err)
				}
			}
			attackerTokens := []string{first.Token}
			if tc.racingAttempt {
				// The attacker's login reads the account (and its password hash) just before
				// the link, and finishes after it.
				hooks.afterUserByEmail = link
				if s, err := attackerSvc.Login(ctx, anon, auth.LoginRequest{Email: victimEmail, Password: "attacker-horse"}); err == nil {
					attackerTokens = append(attackerTokens, s.Token)
				}
			} else {
				link()
			}
			if victim.Token == "" {
				t.Fatal("the victim got no session")
			}
			for i, tok := range attackerTokens {
				_, err := e.svc.Validate(ctx, tok)
				wantErr(t, err, errs.KindUnauthenticated, "session expired or invalid")
				if t.Failed() {
					t.Fatalf("attacker session %d survived", i)
				}
			}
			_, err = e.svc.Login(ctx, anon, auth.LoginRequest{Email: victimEmail, Password: "attacker-horse"})
			wantErr(t, err, errs.KindUnauthenticated, "invalid email or password")
			u, err := userOf(e.svc.Validate(ctx, victim.Token))
			if err != nil || u.ID != first.User.ID || u.AuthProvider != auth.ProviderGoogle || victim.User.AuthProvider != auth.ProviderGoogle {
				t.Fatalf("the victim's session = %+v, %v; want the linked google account", u, err)
			}
			stored, _ := e.store.UserByID(ctx, u.ID)
			if stored.PasswordHash != "" || stored.IDPUID != "sub-victim" {
				t.Fatalf("stored account = %+v", stored)
			}
			// Every session from before the link is deleted. Only the racing login's, written
			// after the deletion, may remain, dead by its old epoch (checked above).
			racing := int64(len(attackerTokens) - 1)
			if n, _ := e.db.Collection("sessions").CountDocuments(ctx, bson.D{{Key: "user_id", Value: u.ID},
				{Key: "_id", Value: bson.D{{Key: "$ne", Value: accounts.HashToken(victim.Token)}}}}); n > racing {
				t.Fatalf("%d other sessions left; want at most %d", n, racing)
			}
			success := true
			recs, _, _ := e.store.LoginRecords(ctx, accounts.RecordFilter{UserID: u.ID, Success: &success}, 0, 10)
			var linked int
			for _, r := range recs {
				if r.Reason == accounts.ReasonLinked {
					linked++
					if r.Method != accounts.MethodGoogle || r.Email != victimEmail {
						t.Fatalf("linking record = %+v", r)
					}
				}
			}
			if linked != 1 {
				t.Fatalf("%d linking records in %+v; want 1", linked, recs)
			}
			// The next login of the subject is a plain one: nothing more is revoked.
			again, err := victimSvc.Google(ctx, anon, auth.GoogleRequest{IDToken: "victim-token"})
			if err != nil {
				t.Fatal(err)
			}
			for _, tok := range []string{victim.Token, again.Token} {
				if _, err := e.svc.Validate(ctx, tok); err != nil {
					t.Fatalf("a later login ended the victim's session: %v", err)
				}
			}
		})
	}
}

// Linking is only for an account that has no subject yet; another subject is refused and
// changes nothing.
func TestLinkingAnotherSubjectChangesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	anon := caller("", "")
	owner := e.register(t, victimEmail)
	tokens := fakeIDP{"owner": victimToken["victim-token"],
		"other": idp.Identity{Subject: "sub-other", Email: victimEmail, EmailVerified: true}}
	svc := e.service(t, withIDP(tokens))
	if _, err := svc.Google(ctx, anon, auth.GoogleRequest{IDToken: "owner"}); err != nil {
		t.Fatal(err)
	}
	before, _ := e.store.UserByID(ctx, owner.ID)
	_, err := svc.Google(ctx, anon, auth.GoogleRequest{IDToken: "other"})
	wantErr(t, err, errs.KindConflict, "email is linked to another identity provider account")
	after, _ := e.store.UserByID(ctx, owner.ID)
	if after.IDPUID != "sub-victim" || after.SessionEpoch != before.SessionEpoch {
		t.Fatalf("a refused link changed the account: %+v → %+v", before, after)
	}
}
