package accounts_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// A login whose last steps fail leaves exactly one record, the failure, and no session: no
// success record that the failure record would collide with, and no session without one.
func TestFailedLoginStepLeavesOneFailureRecord(t *testing.T) {
	cases := []struct {
		name   string
		inject func(h *hookStore)
	}{
		{"stamping last_login_at fails", func(h *hookStore) { h.failSetLastLogin = true }},
		{"storing the session fails", func(h *hookStore) { h.failInsertSession = true }},
		{"writing the success record fails", func(h *hookStore) { h.failSuccessRecord = true }},
	}
	for _, tc := range cases {
		for _, method := range []string{accounts.MethodPassword, accounts.MethodGoogle} {
			t.Run(tc.name+"/"+method, func(t *testing.T) {
				e := newEnv(t)
				ctx := context.Background()
				ada := e.register(t, "ada@example.com")
				hooks := &hookStore{Store: e.store}
				tc.inject(hooks)
				svc := e.service(t, withStore(hooks),
					withIDP(fakeIDP{"tok": {Subject: "sub-ada", Email: "ada@example.com", EmailVerified: true}}))
				var err error
				if method == accounts.MethodPassword {
					_, err = svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"})
				} else {
					_, err = svc.Google(ctx, caller("", ""), auth.GoogleRequest{IDToken: "tok"})
				}
				if err == nil {
					t.Fatal("the login succeeded although a step failed")
				}
				recs, total, _ := e.store.LoginRecords(ctx, accounts.RecordFilter{UserID: ada.ID}, 0, 10)
				// Newest first: the attempt's record, then the registration's.
				if total != 2 || recs[0].Success || recs[0].Reason != accounts.ReasonError || recs[0].Method != method {
					t.Fatalf("records = %+v; want one failure record (reason error) after the registration", recs)
				}
				// No session was added: only the registration's exists, or none once linking
				// (which the google attempt did before failing) ended it.
				want := int64(1)
				if method == accounts.MethodGoogle {
					want = 0
				}
				if n, _ := e.db.Collection("sessions").CountDocuments(ctx, bson.D{{Key: "user_id", Value: ada.ID}}); n != want {
					t.Fatalf("%d sessions; want %d", n, want)
				}
				// Our own failure is not the caller's: no login unit stays counted (the
				// registration keeps its own).
				if n := e.quota.total() - e.quota.used(quota.ScopeRegister, ipA); n != 0 {
					t.Fatalf("%d units counted after a server-side failure", n)
				}
			})
		}
	}
}

// A taken e-mail is refused before any password is hashed.
func TestRegisterTakenEmailHashesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	hasher := &countingHasher{PasswordHasher: mustHasher(t, 64)}
	svc := e.service(t, withHasher(hasher))
	base := hasher.hashes.Load() // New hashed its dummy password
	reg := func(email string) error {
		_, err := svc.Register(ctx, caller("", ""), auth.RegisterRequest{Email: email, Password: "correct-horse", FirstName: "A", LastName: "B"})
		return err
	}
	if err := reg("ada@example.com"); err != nil {
		t.Fatal(err)
	}
	e.markVerified(t, "ada@example.com")
	for _, email := range []string{"ada@example.com", " ADA@Example.com "} {
		before := hasher.hashes.Load()
		wantErr(t, reg(email), errs.KindConflict, "email is already registered")
		if n := hasher.hashes.Load() - before; n != 0 {
			t.Fatalf("registering the taken %q hashed %d times", email, n)
		}
	}
	if err := reg("bob@example.com"); err != nil || hasher.hashes.Load()-base != 2 {
		t.Fatalf("a new e-mail: %v after %d hashes; want 2 in all", err, hasher.hashes.Load()-base)
	}
}

// "é" typed as U+00E9 or as "e" + U+0301 is one character: in a passphrase and in an
// address, whichever spelling registered and whichever logs in.
func TestUnicodeSpellingsAreOneAccount(t *testing.T) {
	const nfc, nfd = "\u00e9", "e\u0301"
	cases := []struct {
		name                   string
		regEmail, regPW        string
		loginEmail, loginPW    string
		registerConflictsEmail string // another spelling of regEmail
	}{
		{"NFD password, NFC login", "ada@example.com", "caf" + nfd + "-au-lait", "ada@example.com", "caf" + nfc + "-au-lait", ""},
		{"NFC password, NFD login", "ada@example.com", "caf" + nfc + "-au-lait", "ada@example.com", "caf" + nfd + "-au-lait", ""},
		{"NFD address, NFC login", "jos" + nfd + "@example.com", "correct-horse", "JOS" + nfc + "@example.com", "correct-horse",
			"jos" + nfc + "@example.com"},
		{"NFC address, NFD login", "jos" + nfc + "@example.com", "correct-horse", "jos" + nfd + "@example.com", "correct-horse",
			"JOSE\u0301@example.com"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			reg, err := e.svc.Register(ctx, caller("", ""), auth.RegisterRequest{Email: tc.regEmail, Password: tc.regPW, FirstName: "A", LastName: "B"})
			if err != nil {
				t.Fatal(err)
			}
			s, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: tc.loginEmail, Password: tc.loginPW})
			if err != nil || s.User.ID != reg.User.ID {
				t.Fatalf("login with the other spelling = %+v, %v", s.User, err)
			}
			if tc.registerConflictsEmail != "" {
				e.markVerified(t, reg.User.Email)
				_, err := e.svc.Register(ctx, caller("", ""), auth.RegisterRequest{Email: tc.registerConflictsEmail, Password: "other-horse", FirstName: "A", LastName: "B"})
				wantErr(t, err, errs.KindConflict, "email is already registered")
			}
		})
	}
}
