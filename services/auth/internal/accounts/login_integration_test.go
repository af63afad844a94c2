package accounts_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

func hexSHA(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }

// Every kind of login attempt leaves exactly one record with the right outcome, and never a
// raw IP.
func TestLoginRecordsForEveryAttemptKind(t *testing.T) {
	e := newEnv(t)
	e.quota.limits[quota.ScopeLoginEmail] = 100 // this test is about the window of an e-mail and a client
	ctx := context.Background()
	anon := caller("", "")
	ada := e.register(t, "ada@example.com")
	bob := e.register(t, "bob@example.com")
	carol := e.register(t, "carol@example.com")
	until := e.clock.Now().Add(time.Hour)
	coll := e.db.Collection("users")
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: bob.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "banned"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: carol.ID}}, bson.D{{Key: "$set", Value: bson.D{{Key: "timeout_until", Value: until}}}}); err != nil {
		t.Fatal(err)
	}
	dave := accounts.User{ID: "dave", Email: "dave@example.com", FirstName: "D", LastName: "D", AuthProvider: auth.ProviderGoogle,
		IDPUID: "sub-dave", Role: auth.RoleUser, Status: auth.StatusActive, QuotaLimit: 100, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
	if err := e.store.InsertUser(ctx, dave); err != nil {
		t.Fatal(err)
	}
	login := func(email, pw string) error {
		_, err := e.svc.Login(ctx, anon, auth.LoginRequest{Email: email, Password: pw})
		return err
	}
	type want struct {
		email, userID, reason string
		success               bool
	}
	// Registering logged each of them in: their first records.
	wants := []want{{"ada@example.com", ada.ID, "registered", true}, {"bob@example.com", bob.ID, "registered", true},
		{"carol@example.com", carol.ID, "registered", true}}
	check := func(err error, kind errs.Kind, msg string, w want) {
		t.Helper()
		if kind == 0 {
			if err != nil {
				t.Fatalf("%s: %v", w.email, err)
			}
		} else {
			wantErr(t, err, kind, msg)
		}
		wants = append(wants, w)
	}
	check(login(" ADA@example.com ", "correct-horse"), 0, "", want{"ada@example.com", ada.ID, "", true})
	check(login("ada@example.com", "wrong-horse"), errs.KindUnauthenticated, "invalid email or password", want{"ada@example.com", ada.ID, "wrong_password", false})
	check(login("nobody@example.com", "correct-horse"), errs.KindUnauthenticated, "invalid email or password", want{"nobody@example.com", "", "unknown_email", false})
	check(login("dave@example.com", "correct-horse"), errs.KindUnauthenticated, "invalid email or password", want{"dave@example.com", "dave", "no_password", false})
	check(login("bob@example.com", "correct-horse"), errs.KindForbidden, "account is banned", want{"bob@example.com", bob.ID, "banned", false})
	check(login("carol@example.com", "correct-horse"), errs.KindForbidden,
		"account is suspended until "+until.UTC().Format(time.RFC3339), want{"carol@example.com", carol.ID, "suspended", false})
	// A banned account with a wrong password learns nothing about the ban.
	check(login("bob@example.com", "wrong-horse"), errs.KindUnauthenticated, "invalid email or password", want{"bob@example.com", bob.ID, "wrong_password", false})
	e.quota.setDown(true)
	check(login("ada@example.com", "correct-horse"), errs.KindUnavailable, "quota service unavailable", want{"ada@example.com", "", "unavailable", false})
	e.quota.setDown(false)
	// Exhaust the window of ada and this client: 5 units, 1 already counted (the wrong
	// password).
	for range 4 {
		_ = login("ada@example.com", "wrong-horse")
		wants = append(wants, want{"ada@example.com", ada.ID, "wrong_password", false})
	}
	check(login("ada@example.com", "correct-horse"), errs.KindTooMany, "too many failed login attempts", want{"ada@example.com", "", "rate_limited", false})
	_, err := e.svc.Google(ctx, anon, auth.GoogleRequest{IDToken: "x.y.z"})
	check(err, errs.KindUnauthenticated, "identity provider not configured", want{"", "", "idp_not_configured", false})

	recs, total, err := e.store.LoginRecords(ctx, accounts.RecordFilter{}, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if int(total) != len(wants) {
		t.Fatalf("%d records for %d attempts", total, len(wants))
	}
	for i, w := range wants {
		r := recs[len(recs)-1-i] // newest first
		method := accounts.MethodPassword
		if w.reason == "idp_not_configured" {
			method = accounts.MethodGoogle
		}
		if r.Email != w.email || r.UserID != w.userID || r.Reason != w.reason || r.Success != w.success ||
			r.Method != method || r.IPHash != ipA || r.UserAgent != "test-agent/1.0" || r.CreatedAt.IsZero() || r.ID == "" {
			t.Errorf("attempt %d: record %+v, want %+v", i, r, w)
		}
	}
	// The records hold the identity key and nothing that looks like an address.
	raw, err := e.db.Collection("login_records").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := raw.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		for k := range d {
			if k == "ip" || k == "ip_address" || k == "client_ip" {
				t.Fatalf("a raw IP field %q was stored: %v", k, d)
			}
		}
	}
	got, _ := e.store.UserByID(ctx, ada.ID)
	if got.LastLoginAt == nil || !got.LastLoginAt.Equal(e.clock.Now()) {
		t.Fatalf("last_login_at after the successful login = %v", got.LastLoginAt)
	}
}

// Only failures stay counted: a successful login gives back both units; a failed one keeps
// them. Keys are hashes of the pair (e-mail, client) and of the e-mail, never the e-mail;
// the client's ID-token window is not touched by password logins.
func TestOnlyFailuresStayCounted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.register(t, "ada@example.com")
	key, pair := hexSHA("ada@example.com"), hexSHA(hexSHA("ada@example.com")+ipA)
	for range 3 {
		if _, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "Ada@Example.com", Password: "correct-horse"}); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := e.quota.used(quota.ScopeLoginEmail, key), e.quota.used(quota.ScopeLoginEmailClient, pair); n != 0 || m != 0 {
		t.Fatalf("after 3 successes %d e-mail and %d pair units are counted, want 0", n, m)
	}
	if _, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "nope-nope"}); err == nil {
		t.Fatal("wrong password accepted")
	}
	if n, m := e.quota.used(quota.ScopeLoginEmail, key), e.quota.used(quota.ScopeLoginEmailClient, pair); n != 1 || m != 1 {
		t.Fatalf("after a failure %d e-mail and %d pair units are counted, want 1 and 1", n, m)
	}
	if n := e.quota.used(quota.ScopeLoginIP, ipA); n != 0 {
		t.Fatalf("a password failure took %d units of the client's ID-token window", n)
	}
	for k := range e.quota.units {
		if strings.Contains(k, "ada") {
			t.Fatalf("the raw e-mail reached the quota service: %q", k)
		}
	}
	// When the e-mail's ceiling is full the pair's unit is given back.
	e.quota.limits[quota.ScopeLoginEmail] = 0
	_, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "other@example.com", Password: "whatever-1"})
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindTooMany || e.RetryAfter != 600*time.Second {
		t.Fatalf("login with the e-mail's ceiling full = %v; want 429 with Retry-After 600s", err)
	}
	if n := e.quota.used(quota.ScopeLoginEmailClient, hexSHA(hexSHA("other@example.com")+ipA)); n != 0 {
		t.Fatalf("the pair unit of a refused attempt stayed counted (%d)", n)
	}
}

// A stranger failing from one client fills only the window of their pair: the owner, from
// another client, still gets in, and the stranger's refused attempts no longer reach the
// e-mail's ceiling. Failures spread over many clients meet the ceiling, which then refuses
// every client, the owner's too, while other e-mails are unaffected.
func TestStrangerCannotLockTheOwnerOut(t *testing.T) {
	e := newEnv(t)
	e.quota.limits[quota.ScopeLoginEmail] = 12 // per pair: 5
	ctx := context.Background()
	e.register(t, "ada@example.com")
	e.register(t, "bob@example.com")
	from := func(i int) identity.Caller {
		c := caller("", "")
		c.IPHash = fmt.Sprintf("%064x", i)
		return c
	}
	login := func(c identity.Caller, email, pw string) error {
		_, err := e.svc.Login(ctx, c, auth.LoginRequest{Email: email, Password: pw})
		return err
	}
	stranger, owner := from(1), from(2)
	for range 5 {
		wantErr(t, login(stranger, "ada@example.com", "guess-guess"), errs.KindUnauthenticated, "invalid email or password")
	}
	for range 10 {
		wantErr(t, login(stranger, "ada@example.com", "correct-horse"), errs.KindTooMany, "too many failed login attempts")
	}
	if n := e.quota.used(quota.ScopeLoginEmail, hexSHA("ada@example.com")); n != 5 {
		t.Fatalf("the e-mail's ceiling counts %d units; want the stranger's 5 failures, not the refused attempts", n)
	}
	if err := login(owner, "ada@example.com", "correct-horse"); err != nil {
		t.Fatalf("the owner from another client: %v", err)
	}
	// The stranger's own logins to another account are not held against them.
	if err := login(stranger, "bob@example.com", "correct-horse"); err != nil {
		t.Fatalf("the stranger's client with another e-mail: %v", err)
	}
	// Spread over clients: 7 more failures fill the ceiling of 12.
	for i := range 7 {
		wantErr(t, login(from(10+i), "ada@example.com", "guess-guess"), errs.KindUnauthenticated, "invalid email or password")
	}
	err := login(owner, "ada@example.com", "correct-horse")
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindTooMany || e.Message != "too many failed login attempts" || e.RetryAfter != 600*time.Second {
		t.Fatalf("the owner once the ceiling is full = %v; want 429 with Retry-After", err)
	}
	if n := e.quota.used(quota.ScopeLoginEmailClient, hexSHA(hexSHA("ada@example.com")+owner.IPHash)); n != 0 {
		t.Fatalf("the owner's refused attempt kept %d pair units", n)
	}
	if err := login(from(99), "bob@example.com", "correct-horse"); err != nil {
		t.Fatalf("another e-mail while ada's ceiling is full: %v", err)
	}
	// Every key the quota service saw is a 64-character hash or an identity key.
	for k := range e.quota.units {
		if _, key, _ := strings.Cut(k, "|"); len(key) != 64 {
			t.Fatalf("quota key %q is not a 64-character hash", k)
		}
	}
}

// Every login issues a fresh token; old sessions of the account stay valid until logout.
func TestSessionsAreFreshAndRevocable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	reg, err := e.svc.Register(ctx, caller("", ""), auth.RegisterRequest{Email: "ada@example.com", Password: "correct-horse", FirstName: "Ada", LastName: "L"})
	if err != nil {
		t.Fatal(err)
	}
	if reg.User.Role != auth.RoleUser || reg.User.Status != auth.StatusActive || reg.User.AuthProvider != auth.ProviderEmail ||
		reg.User.QuotaLimit != 100 || !reg.User.CreatedAt.Equal(reg.User.UpdatedAt) || !reg.ExpiresAt.Equal(e.clock.Now().Add(time.Hour)) {
		t.Fatalf("registered user = %+v", reg)
	}
	l1, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"})
	if err != nil {
		t.Fatal(err)
	}
	l2, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"})
	if err != nil {
		t.Fatal(err)
	}
	if l1.Token == reg.Token || l1.Token == l2.Token {
		t.Fatal("a login reused a token")
	}
	for _, tok := range []string{reg.Token, l1.Token, l2.Token} {
		if u, err := userOf(e.svc.Validate(ctx, tok)); err != nil || u.ID != reg.User.ID {
			t.Fatalf("validate = %+v, %v", u, err)
		}
	}
	// The token itself is stored nowhere.
	n, _ := e.db.Collection("sessions").CountDocuments(ctx, bson.D{{Key: "_id", Value: l1.Token}})
	if n != 0 {
		t.Fatal("a raw token is stored")
	}
	if err := e.svc.Logout(ctx, l1.Token); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Validate(ctx, l1.Token)
	wantErr(t, err, errs.KindUnauthenticated, "session expired or invalid")
	if err := e.svc.Logout(ctx, l1.Token); err != nil {
		t.Fatalf("second logout: %v", err)
	}
	// Expiry: the session is refused once its TTL has passed.
	e.clock.Advance(time.Hour)
	_, err = e.svc.Validate(ctx, l2.Token)
	wantErr(t, err, errs.KindUnauthenticated, "session expired or invalid")
	for _, tok := range []string{"", "nope", strings.Repeat("x", 10_000)} {
		_, err = e.svc.Validate(ctx, tok)
		wantErr(t, err, errs.KindUnauthenticated, "session expired or invalid")
	}
}

// A hash made with older parameters is replaced by one at the current cost at the next login.
func TestLoginRehashesOldHashes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	u := e.register(t, "ada@example.com")
	before, _ := e.store.UserByID(ctx, u.ID)
	// A replica with higher cost parameters takes over.
	e.svc = e.service(t, func(o *accounts.Options) { o.Hasher = mustHasher(t, 128) })
	if _, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"}); err != nil {
		t.Fatal(err)
	}
	after, _ := e.store.UserByID(ctx, u.ID)
	if !strings.Contains(before.PasswordHash, "m=64,") || !strings.Contains(after.PasswordHash, "m=128,") {
		t.Fatalf("hash %q → %q; want upgraded to m=128", before.PasswordHash, after.PasswordHash)
	}
	if _, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"}); err != nil {
		t.Fatalf("login with the new hash: %v", err)
	}
}

// One client spraying passwords over many e-mails meets its own window over all e-mails,
// though no e-mail, and no pair, is near its limit; another client is not held back.
func TestSprayOverManyEmailsMeetsTheClientWindow(t *testing.T) {
	e := newEnv(t)
	e.quota.limits[quota.ScopeLoginClient] = 8
	ctx := context.Background()
	e.register(t, "ada@example.com")
	sprayer := caller("", "")
	sprayer.IPHash = fmt.Sprintf("%064x", 7)
	for i := range 8 {
		_, err := e.svc.Login(ctx, sprayer, auth.LoginRequest{Email: fmt.Sprintf("victim%d@example.com", i), Password: "guess-guess"})
		wantErr(t, err, errs.KindUnauthenticated, "invalid email or password")
	}
	_, err := e.svc.Login(ctx, sprayer, auth.LoginRequest{Email: "victim99@example.com", Password: "guess-guess"})
	wantErr(t, err, errs.KindTooMany, "too many failed login attempts")
	// The refused attempt took nothing of its pair's or its e-mail's windows.
	if n := e.quota.used(quota.ScopeLoginEmail, hexSHA("victim99@example.com")); n != 0 {
		t.Fatalf("a refused attempt kept %d units of its e-mail's ceiling", n)
	}
	if _, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "correct-horse"}); err != nil {
		t.Fatalf("another client: %v", err)
	}
}

// Once an e-mail's ceiling is full, a login for it goes on with a captcha the gateway found
// passed; without a verifier it stays a 429, and with one but no token it asks for it.
func TestCaptchaLetsPastAFullCeiling(t *testing.T) {
	e := newEnv(t)
	e.quota.limits[quota.ScopeLoginEmail] = 0 // full from the start
	ctx := context.Background()
	e.register(t, "ada@example.com")
	login := func(pw, captcha string) error {
		_, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: pw, Captcha: captcha})
		return err
	}
	wantErr(t, login("correct-horse", auth.CaptchaOff), errs.KindTooMany, "too many failed login attempts")
	wantErr(t, login("correct-horse", auth.CaptchaMissing), errs.KindInvalid, auth.MsgCaptchaRequired)
	wantErr(t, login("guess-guess", auth.CaptchaPassed), errs.KindUnauthenticated, "invalid email or password")
	if err := login("correct-horse", auth.CaptchaPassed); err != nil {
		t.Fatalf("login with a passed captcha: %v", err)
	}
	// The pair's and the client's windows still count the failure past the ceiling.
	if n := e.quota.used(quota.ScopeLoginEmailClient, hexSHA(hexSHA("ada@example.com")+ipA)); n != 1 {
		t.Fatalf("the pair window counts %d failures, want 1", n)
	}
	recs, _, err := e.store.LoginRecords(ctx, accounts.RecordFilter{Email: "ada@example.com"}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, r := range recs {
		reasons[r.Reason]++
	}
	if reasons[accounts.ReasonCaptchaRequired] != 1 || reasons[accounts.ReasonRateLimited] != 1 {
		t.Fatalf("login records by reason: %v", reasons)
	}
}

// Registrations take a unit of their client's window, kept for a taken e-mail too; beyond
// the window the answer is 429, and another client still registers.
func TestRegistrationWindow(t *testing.T) {
	e := newEnv(t)
	e.quota.limits[quota.ScopeRegister] = 2
	ctx := context.Background()
	reg := func(c identity.Caller, email string) error {
		_, err := e.svc.Register(ctx, c, auth.RegisterRequest{Email: email, Password: "correct-horse", FirstName: "A", LastName: "B"})
		return err
	}
	if err := reg(caller("", ""), "one@example.com"); err != nil {
		t.Fatal(err)
	}
	e.markVerified(t, "one@example.com")
	wantErr(t, reg(caller("", ""), "one@example.com"), errs.KindConflict, "email is already registered")
	wantErr(t, reg(caller("", ""), "two@example.com"), errs.KindTooMany, "too many registrations from this client")
	// Invalid bodies are refused before the window: they take nothing.
	wantErr(t, reg(caller("", ""), "not-an-email"), errs.KindInvalid, "email must be a valid e-mail address")
	other := caller("", "")
	other.IPHash = fmt.Sprintf("%064x", 8)
	if err := reg(other, "two@example.com"); err != nil {
		t.Fatalf("another client: %v", err)
	}
	if n := e.quota.used(quota.ScopeRegister, ipA); n != 2 {
		t.Fatalf("the first client's window counts %d registrations, want 2", n)
	}
}
