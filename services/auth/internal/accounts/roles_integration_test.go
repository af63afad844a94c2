package accounts_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/paging"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// roleChanges returns the audit entries of role changes written so far.
func roleChanges(e *env) []auditCall { return e.audit.byAction(moderation.AuditUserRole) }

func TestSetRole(t *testing.T) {
	e := newEnv(t)
	// The identity token the gateway signed for the admin: the audit write must carry it on.
	ctx := actingFor("admin-token")
	admin := e.superAdmin(t, "admin@example.com")
	ada := e.register(t, "ada@example.com")
	as := caller(admin.ID, auth.RoleSuperAdmin)
	e.clock.Advance(time.Minute)

	u, err := e.svc.SetRole(ctx, as, ada.ID, auth.RoleModerator)
	if err != nil || u.Role != auth.RoleModerator || !u.UpdatedAt.Equal(e.clock.Now()) || u.ID != ada.ID {
		t.Fatalf("SetRole = %+v, %v", u, err)
	}
	stored, _ := e.store.UserByID(ctx, ada.ID)
	if stored.Role != auth.RoleModerator || !stored.UpdatedAt.Equal(e.clock.Now()) {
		t.Fatalf("stored = %+v", stored)
	}
	rc := e.audit.all()
	if len(rc) != 1 || rc[0].Action != moderation.AuditUserRole || rc[0].TargetType != moderation.TargetUser ||
		rc[0].TargetID != ada.ID || fmt.Sprint(rc[0].Detail) != "map[from:user to:moderator]" || rc[0].ID == "" ||
		rc[0].Token != "admin-token" {
		t.Fatalf("audit entries = %+v", rc)
	}
	// Setting the same role again changes nothing and records nothing.
	if u, err := e.svc.SetRole(ctx, as, ada.ID, auth.RoleModerator); err != nil || u.Role != auth.RoleModerator {
		t.Fatalf("same role = %+v, %v", u, err)
	}
	if n := len(e.audit.all()); n != 1 {
		t.Fatalf("%d audit entries after a no-op, want 1", n)
	}

	_, err = e.svc.SetRole(ctx, as, "no-such-user", auth.RoleUser)
	wantErr(t, err, errs.KindNotFound, "user not found")
	_, err = e.svc.SetRole(ctx, as, admin.ID, auth.RoleUser)
	wantErr(t, err, errs.KindInvalid, "you cannot change your own role")
	_, err = e.svc.SetRole(ctx, caller(ada.ID, auth.RoleModerator), admin.ID, auth.RoleUser)
	wantErr(t, err, errs.KindForbidden, "super admin role required")
	// A token that still says super_admin after a demotion is not enough: the database decides.
	_, err = e.svc.SetRole(ctx, caller(ada.ID, auth.RoleSuperAdmin), admin.ID, auth.RoleUser)
	wantErr(t, err, errs.KindForbidden, "super admin role required")
	_, err = e.svc.SetRole(ctx, caller("ghost", auth.RoleSuperAdmin), ada.ID, auth.RoleUser)
	wantErr(t, err, errs.KindForbidden, "super admin role required")

	// A banned super admin can change nothing.
	other := e.superAdmin(t, "other@example.com")
	if _, err := e.db.Collection("users").UpdateOne(ctx, bson.D{{Key: "_id", Value: other.ID}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: auth.StatusBanned}}}}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.SetRole(ctx, caller(other.ID, auth.RoleSuperAdmin), ada.ID, auth.RoleUser)
	wantErr(t, err, errs.KindForbidden, "account is banned")
	// Demoting another super admin is fine while one remains.
	if u, err := e.svc.SetRole(ctx, as, other.ID, auth.RoleUser); err != nil || u.Role != auth.RoleUser {
		t.Fatalf("demote the second super admin = %+v, %v", u, err)
	}
}

// interleaved runs before right before the wrapped store's next role write on target, to
// force the race "two super admins demote each other" into one fixed order.
type interleaved struct {
	accounts.Store
	target string
	before func()
	once   sync.Once
}

func (s *interleaved) SetRole(ctx context.Context, id, from, to string, now time.Time) (bool, error) {
	if id == s.target {
		s.once.Do(s.before)
	}
	return s.Store.SetRole(ctx, id, from, to, now)
}

// A passes all checks to demote B; just before A's write, B's own demotion of A lands. A's
// re-check then finds no super admin, restores B and answers 409.
func TestDemotionRaceIsUndone(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.superAdmin(t, "a@example.com")
	b := e.superAdmin(t, "b@example.com")
	racer := &interleaved{Store: e.store, target: b.ID, before: func() {
		if ok, err := e.store.SetRole(ctx, a.ID, auth.RoleSuperAdmin, auth.RoleUser, e.clock.Now()); err != nil || !ok {
			t.Errorf("B's demotion of A: %v %v", ok, err)
		}
	}}
	svc := e.service(t, func(o *accounts.Options) { o.Store = racer })
	_, err := svc.SetRole(ctx, caller(a.ID, auth.RoleSuperAdmin), b.ID, auth.RoleUser)
	wantErr(t, err, errs.KindConflict, "cannot demote the last active super admin")
	if n, _ := e.store.CountUsers(ctx, accounts.UserFilter{Role: auth.RoleSuperAdmin}); n != 1 {
		t.Fatalf("%d super admins after the race, want 1", n)
	}
	if got, _ := e.store.UserByID(ctx, b.ID); got.Role != auth.RoleSuperAdmin {
		t.Fatalf("B is %s, want restored to super_admin", got.Role)
	}
	if n := len(roleChanges(e)); n != 0 {
		t.Fatalf("the undone demotion left %d audit entries", n)
	}
}

// Many rounds of two super admins demoting each other at once, over two replicas: there is
// always at least one super admin left, and every success has its record.
func TestConcurrentMutualDemotion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	replicas := []*accounts.Service{e.svc, e.service(t)}
	for round := range 15 {
		a := e.superAdmin(t, "a"+string(rune('a'+round))+"@example.com")
		b := e.superAdmin(t, "b"+string(rune('a'+round))+"@example.com")
		// Only these two are super admins in this round.
		if round > 0 {
			if _, err := e.db.Collection("users").UpdateMany(ctx,
				bson.D{{Key: "_id", Value: bson.D{{Key: "$nin", Value: bson.A{a.ID, b.ID}}}}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "role", Value: auth.RoleUser}}}}); err != nil {
				t.Fatal(err)
			}
		}
		before := len(roleChanges(e))
		var wg sync.WaitGroup
		var errA, errB error
		wg.Go(func() { _, errA = replicas[0].SetRole(ctx, caller(a.ID, auth.RoleSuperAdmin), b.ID, auth.RoleUser) })
		wg.Go(func() {
			_, errB = replicas[1].SetRole(ctx, caller(b.ID, auth.RoleSuperAdmin), a.ID, auth.RoleModerator)
		})
		wg.Wait()
		t.Logf("round %d: %v | %v", round, errA, errB)
		n, err := e.store.CountUsers(ctx, accounts.UserFilter{Role: auth.RoleSuperAdmin})
		if err != nil {
			t.Fatal(err)
		}
		if n < 1 {
			t.Fatalf("round %d: no super admin left (errors %v, %v)", round, errA, errB)
		}
		for _, err := range []error{errA, errB} {
			if err != nil && !errs.IsKind(err, errs.KindConflict) && !errs.IsKind(err, errs.KindForbidden) {
				t.Fatalf("round %d: unexpected error %v", round, err)
			}
		}
		successes := 0
		for _, err := range []error{errA, errB} {
			if err == nil {
				successes++
			}
		}
		if successes > 1 || int64(2-successes) != n || len(roleChanges(e))-before != successes {
			t.Fatalf("round %d: %d successes, %d super admins, %d audit entries (errors %v, %v)",
				round, successes, n, len(roleChanges(e))-before, errA, errB)
		}
	}
}

func TestLoginRecordsNeedSuperAdmin(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.superAdmin(t, "admin@example.com")
	mod := e.register(t, "mod@example.com")
	q := accounts.RecordQuery{Paging: paging.Page{Page: 1, PageSize: 20}}
	for _, c := range []identity.Caller{caller(mod.ID, auth.RoleModerator), caller(mod.ID, auth.RoleSuperAdmin), caller("", "")} {
		_, err := e.svc.LoginRecords(ctx, c, q)
		wantErr(t, err, errs.KindForbidden, "super admin role required")
	}
	res, err := e.svc.LoginRecords(ctx, caller(admin.ID, auth.RoleSuperAdmin), accounts.RecordQuery{Paging: paging.Page{Page: 1 << 40, PageSize: 100}})
	if err != nil || res.Records == nil || len(res.Records) != 0 || res.Page != 1<<40 {
		t.Fatalf("far page = %+v, %v; want an empty list", res, err)
	}
}

// A role change whose audit entry cannot be written does not stand, and says why.
func TestRoleChangeWithoutRecordIsUndone(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.superAdmin(t, "admin@example.com")
	ada := e.register(t, "ada@example.com")
	e.audit.setFail(errAuditDown)
	if _, err := e.svc.SetRole(ctx, caller(admin.ID, auth.RoleSuperAdmin), ada.ID, auth.RoleModerator); !errors.Is(err, errAuditDown) {
		t.Fatalf("SetRole without its audit entry = %v; want the audit failure", err)
	}
	if stored, _ := e.store.UserByID(ctx, ada.ID); stored.Role != auth.RoleUser {
		t.Fatalf("role stood without an audit entry: %s", stored.Role)
	}
	e.audit.setFail(nil)
	if u, err := e.svc.SetRole(ctx, caller(admin.ID, auth.RoleSuperAdmin), ada.ID, auth.RoleModerator); err != nil || u.Role != auth.RoleModerator {
		t.Fatalf("the retry = %+v, %v", u, err)
	}
	if n := len(roleChanges(e)); n != 1 {
		t.Fatalf("%d audit entries, want the retry's one", n)
	}
}

// Two super admins banning or timing each other out at once, over two replicas, never leave
// no active super admin; a refused action leaves no audit entry behind.
func TestConcurrentMutualBanAndTimeout(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	replicas := []*accounts.Service{e.svc, e.service(t)}
	now := e.clock.Now()
	for round := range 12 {
		a := e.superAdmin(t, fmt.Sprintf("ban-a%d@example.com", round))
		b := e.superAdmin(t, fmt.Sprintf("ban-b%d@example.com", round))
		// Only these two are super admins in this round.
		if _, err := e.db.Collection("users").UpdateMany(ctx,
			bson.D{{Key: "_id", Value: bson.D{{Key: "$nin", Value: bson.A{a.ID, b.ID}}}}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "role", Value: auth.RoleUser}}}}); err != nil {
			t.Fatal(err)
		}
		before := len(e.audit.all())
		var wg sync.WaitGroup
		var errA, errB error
		reason, secs := "takeover", int64(3600)
		wg.Go(func() {
			_, errA = replicas[0].Ban(ctx, caller(a.ID, auth.RoleSuperAdmin), b.ID, auth.BanRequest{Reason: &reason})
		})
		wg.Go(func() {
			if round%2 == 0 {
				_, errB = replicas[1].Ban(ctx, caller(b.ID, auth.RoleSuperAdmin), a.ID, auth.BanRequest{Reason: &reason})
			} else {
				_, errB = replicas[1].Timeout(ctx, caller(b.ID, auth.RoleSuperAdmin), a.ID, auth.TimeoutRequest{DurationSeconds: &secs, Reason: &reason})
			}
		})
		wg.Wait()
		active, err := e.store.CountUsers(ctx, accounts.UserFilter{Role: auth.RoleSuperAdmin, Status: auth.StatusActive, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		successes := 0
		for _, err := range []error{errA, errB} {
			switch {
			case err == nil:
				successes++
			case errs.IsKind(err, errs.KindConflict), errs.IsKind(err, errs.KindForbidden):
			default:
				t.Fatalf("round %d: unexpected error %v", round, err)
			}
		}
		if active < 1 || successes > 1 || int64(2-successes) != active || len(e.audit.all())-before != successes {
			t.Fatalf("round %d: %d successes, %d active super admins, %d audit entries (errors %v, %v)",
				round, successes, active, len(e.audit.all())-before, errA, errB)
		}
	}
}

// standingRace runs before right before the wrapped store's next standing write on target.
type standingRace struct {
	accounts.Store
	target string
	before func()
	once   sync.Once
}

func (s *standingRace) SetStanding(ctx context.Context, id string, from, to accounts.Standing, at time.Time) (bool, error) {
	if id == s.target {
		s.once.Do(s.before)
	}
	return s.Store.SetStanding(ctx, id, from, to, at)
}

// A passes all checks to ban B; just before A's write, B's timeout of A lands. A's re-check
// finds no active super admin, so A's ban is undone (B is active again) and answers 409.
func TestBanRaceIsUndone(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.superAdmin(t, "race-a@example.com")
	b := e.superAdmin(t, "race-b@example.com")
	reason := "takeover"
	racer := &standingRace{Store: e.store, target: b.ID, before: func() {
		until := e.clock.Now().Add(time.Hour)
		if ok, err := e.store.SetStanding(ctx, a.ID, accounts.Standing{Status: auth.StatusActive},
			accounts.Standing{Status: auth.StatusActive, TimeoutUntil: &until, TimeoutReason: &reason}, e.clock.Now()); err != nil || !ok {
			t.Errorf("B's timeout of A: %v %v", ok, err)
		}
	}}
	svc := e.service(t, func(o *accounts.Options) { o.Store = racer })
	_, err := svc.Ban(ctx, caller(a.ID, auth.RoleSuperAdmin), b.ID, auth.BanRequest{Reason: &reason})
	wantErr(t, err, errs.KindConflict, "cannot ban the last active super admin")
	if got, _ := e.store.UserByID(ctx, b.ID); got.Status != auth.StatusActive || got.BanReason != nil {
		t.Fatalf("B is %s (%v), want restored to active", got.Status, got.BanReason)
	}
	if n := len(e.audit.byAction(moderation.AuditUserBan)); n != 0 {
		t.Fatalf("the undone ban left %d audit entries", n)
	}
}

// Deleting one's account: the password is checked; a super admin leaves only while another
// active one remains (and is demoted first, under the same rule); what is left of the
// account afterwards is its login records, without e-mail or User-Agent.
func TestDeleteAccount(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	root := e.superAdmin(t, "root@example.com")
	as := func(u auth.User) identity.Caller {
		c := caller(u.ID, u.Role)
		c.SessionID = "s"
		return c
	}
	del := func(u auth.User, pw string) error {
		return e.svc.DeleteAccount(ctx, as(u), auth.DeleteAccountRequest{Password: pw})
	}
	wantErr(t, del(root, "correct-horse"), errs.KindConflict, "cannot delete the last active super admin")
	if got, _ := e.store.UserByID(ctx, root.ID); got.Role != auth.RoleSuperAdmin {
		t.Fatalf("the refused deletion left root %s", got.Role)
	}
	ada := e.register(t, "ada@example.com")
	if _, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "ada@example.com", Password: "nope-nope"}); err == nil {
		t.Fatal("a wrong password signed in")
	}
	wantErr(t, del(ada, "nope-nope"), errs.KindUnauthenticated, "password is wrong")
	wantErr(t, del(ada, ""), errs.KindInvalid, "password is required")
	if err := del(ada, "correct-horse"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := e.store.UserByID(ctx, ada.ID); !errors.Is(err, accounts.ErrUserNotFound) {
		t.Fatalf("the account is still there: %v", err)
	}
	for _, coll := range []string{"sessions", "api_tokens", "email_verifications", "password_resets"} {
		if n, _ := e.db.Collection(coll).CountDocuments(ctx, bson.D{{Key: "user_id", Value: ada.ID}}); n != 0 {
			t.Fatalf("%d %s of the deleted account left", n, coll)
		}
	}
	var records []bson.M
	cur, err := e.db.Collection("login_records").Find(ctx, bson.D{{Key: "user_id", Value: ada.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(ctx, &records); err != nil || len(records) < 2 {
		t.Fatalf("login records %v, %v", records, err)
	}
	for _, r := range records {
		if _, ok := r["email"]; ok {
			t.Fatalf("a login record kept the e-mail: %v", r)
		}
		if _, ok := r["user_agent"]; ok {
			t.Fatalf("a login record kept the User-Agent: %v", r)
		}
	}
	if n, _ := e.db.Collection("login_records").CountDocuments(ctx, bson.D{{Key: "user_id", Value: ada.ID},
		{Key: "reason", Value: accounts.ReasonWrongCurrentPassword}}); n != 1 {
		t.Fatalf("%d records of the wrong password given to delete, want 1", n)
	}
	if n, _ := e.db.Collection("login_records").CountDocuments(ctx, bson.D{{Key: "email", Value: "ada@example.com"}}); n != 0 {
		t.Fatalf("%d login records of the address keep it", n)
	}
	// With another active super admin, root may leave; it is demoted first.
	other := e.superAdmin(t, "other@example.com")
	if err := del(root, "correct-horse"); err != nil {
		t.Fatalf("delete root with another super admin: %v", err)
	}
	if _, err := e.store.UserByID(ctx, root.ID); !errors.Is(err, accounts.ErrUserNotFound) {
		t.Fatalf("root is still there: %v", err)
	}
	if got, _ := e.store.UserByID(ctx, other.ID); got.Role != auth.RoleSuperAdmin {
		t.Fatalf("the remaining super admin is %s", got.Role)
	}
}

// An account without a password is deleted from a session of a fresh identity-provider
// sign-in only: not from an older session, however recently someone signed in elsewhere.
func TestDeleteIdentityProviderAccount(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	svc := e.service(t, withIDP(fakeIDP{"tok": {Subject: "sub-gia", Email: "gia@example.com", EmailVerified: true}}))
	old, err := svc.Google(ctx, caller("", ""), auth.GoogleRequest{IDToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	oldSession, err := svc.Validate(ctx, old.Token)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(11 * time.Minute)
	fresh, err := svc.Google(ctx, caller("", ""), auth.GoogleRequest{IDToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	freshSession, err := svc.Validate(ctx, fresh.Token)
	if err != nil {
		t.Fatal(err)
	}
	as := func(v auth.Validated) identity.Caller {
		c := caller(v.User.ID, auth.RoleUser)
		c.SessionID = v.SessionID
		return c
	}
	err = svc.DeleteAccount(ctx, as(oldSession), auth.DeleteAccountRequest{})
	wantErr(t, err, errs.KindUnauthenticated, "sign in again with your identity provider, then delete the account within 10 minutes")
	if err := svc.DeleteAccount(ctx, as(freshSession), auth.DeleteAccountRequest{}); err != nil {
		t.Fatalf("delete from the fresh sign-in's session: %v", err)
	}
	if _, err := e.store.UserByID(ctx, fresh.User.ID); !errors.Is(err, accounts.ErrUserNotFound) {
		t.Fatalf("the account is still there: %v", err)
	}
}
