package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// seedUsers stores five accounts with the names, roles and standings the list filters tell
// apart, then 20 plain ones, each a second newer than the one before; it returns "now".
func seedUsers(t *testing.T, s *Store) time.Time {
	t.Helper()
	ctx := context.Background()
	now := ms(time.Now())
	base := now.Add(-time.Hour)
	special := []struct {
		id, email, first, last, role string
		banned                       bool
		timeout                      time.Duration // relative to now; 0 = none
	}{
		{"u00", "ada@example.com", "Ada", "Lovelace", auth.RoleUser, false, 0},
		{"u01", "bob@example.com", "Bob", `a.*b(c$d\e`, auth.RoleUser, false, time.Hour},
		{"u02", "carol@example.com", "Carol", "Dot.Name", auth.RoleModerator, true, time.Hour},
		{"u03", "dave@ex.com", "Dave", "Smith", auth.RoleUser, false, -time.Hour},
		{"u04", "eve$x@example.com", "Eve", "(Paren", auth.RoleSuperAdmin, false, 0},
	}
	for i, sp := range special {
		u := user(sp.id, sp.email)
		u.FirstName, u.LastName, u.Role = sp.first, sp.last, sp.role
		u.CreatedAt = base.Add(time.Duration(i) * time.Second)
		if sp.banned {
			u.Status, u.BanReason = auth.StatusBanned, ptr("spam")
		}
		if sp.timeout != 0 {
			u.TimeoutUntil, u.TimeoutReason = ptr(now.Add(sp.timeout)), ptr("cool off")
		}
		if err := s.InsertUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 {
		u := user(fmt.Sprintf("f%02d", i), fmt.Sprintf("user%02d@filler.test", i))
		u.FirstName, u.LastName = "Filler", fmt.Sprintf("Number %d", i)
		u.CreatedAt = base.Add(time.Duration(len(special)+i) * time.Second)
		if err := s.InsertUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	return now
}

func ptr[T any](v T) *T { return &v }

func fillers(from, to int) []string { // newest first
	var ids []string
	for i := to; i >= from; i-- {
		ids = append(ids, fmt.Sprintf("f%02d", i))
	}
	return ids
}

func TestUserListFilters(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := seedUsers(t, s)
	all := append(fillers(0, 19), "u04", "u03", "u02", "u01", "u00")
	activeAll := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return id == "u01" || id == "u02" })
	cases := []struct {
		name        string
		f           accounts.UserFilter
		skip, limit int64
		total       int64
		ids         []string
	}{
		{"newest first", accounts.UserFilter{}, 0, 3, 25, []string{"f19", "f18", "f17"}},
		{"last page", accounts.UserFilter{}, 20, 10, 25, []string{"u04", "u03", "u02", "u01", "u00"}},
		{"past the end", accounts.UserFilter{}, 25, 10, 25, nil},
		{"whole list", accounts.UserFilter{}, 0, 100, 25, all},
		// q is a literal: pattern characters match only themselves.
		{"q .*", accounts.UserFilter{Contains: ".*"}, 0, 100, 1, []string{"u01"}},
		{"q A.*B in another case", accounts.UserFilter{Contains: "A.*B"}, 0, 100, 1, []string{"u01"}},
		{"q (", accounts.UserFilter{Contains: "("}, 0, 100, 2, []string{"u04", "u01"}},
		{"q $", accounts.UserFilter{Contains: "$"}, 0, 100, 2, []string{"u04", "u01"}},
		{`q \`, accounts.UserFilter{Contains: `\`}, 0, 100, 1, []string{"u01"}},
		{"q dot matches a dot only", accounts.UserFilter{Contains: "dotxname"}, 0, 100, 0, nil},
		{"q dot.name", accounts.UserFilter{Contains: "DOT.NAME"}, 0, 100, 1, []string{"u02"}},
		{"q ^ada", accounts.UserFilter{Contains: "^ada"}, 0, 100, 0, nil},
		{"q e-mail, first and last name", accounts.UserFilter{Contains: "ADA"}, 0, 100, 1, []string{"u00"}},
		{"q last name", accounts.UserFilter{Contains: "lovelace"}, 0, 100, 1, []string{"u00"}},
		{"q e-mail", accounts.UserFilter{Contains: "@example.com"}, 0, 100, 4, []string{"u04", "u02", "u01", "u00"}},
		{"q paged", accounts.UserFilter{Contains: "number 1"}, 0, 3, 11, []string{"f19", "f18", "f17"}},
		{"role moderator", accounts.UserFilter{Role: auth.RoleModerator}, 0, 100, 1, []string{"u02"}},
		{"role super_admin", accounts.UserFilter{Role: auth.RoleSuperAdmin}, 0, 100, 1, []string{"u04"}},
		{"role user", accounts.UserFilter{Role: auth.RoleUser}, 0, 2, 23, []string{"f19", "f18"}},
		// u02 is banned with a running timeout: banned. u03's timeout ended: active.
		{"status banned", accounts.UserFilter{Status: auth.StatusBanned, Now: now}, 0, 100, 1, []string{"u02"}},
		{"status suspended", accounts.UserFilter{Status: auth.StatusSuspended, Now: now}, 0, 100, 1, []string{"u01"}},
		{"status active", accounts.UserFilter{Status: auth.StatusActive, Now: now}, 0, 100, 23, activeAll},
		{"suspended once the timeout ended", accounts.UserFilter{Status: auth.StatusSuspended, Now: now.Add(2 * time.Hour)}, 0, 100, 0, nil},
		{"active once the timeout ended", accounts.UserFilter{Status: auth.StatusActive, Now: now.Add(2 * time.Hour)}, 0, 1, 24, []string{"f19"}},
		{"status and q", accounts.UserFilter{Status: auth.StatusActive, Now: now, Contains: "example"}, 0, 100, 2, []string{"u04", "u00"}},
		{"role and status", accounts.UserFilter{Role: auth.RoleUser, Status: auth.StatusSuspended, Now: now}, 0, 100, 1, []string{"u01"}},
		{"role, status and q", accounts.UserFilter{Role: auth.RoleUser, Status: auth.StatusActive, Now: now, Contains: "D"},
			0, 100, 2, []string{"u03", "u00"}},
		{"nothing matches", accounts.UserFilter{Role: auth.RoleModerator, Status: auth.StatusActive, Now: now}, 0, 100, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			users, total, err := s.Users(ctx, tc.f, tc.skip, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, u := range users {
				ids = append(ids, u.ID)
			}
			if total != tc.total || fmt.Sprint(ids) != fmt.Sprint(tc.ids) {
				t.Fatalf("got %v (total %d), want %v (total %d)", ids, total, tc.ids, tc.total)
			}
			if n, err := s.CountUsers(ctx, tc.f); err != nil || n != tc.total {
				t.Fatalf("count = %d, %v; want %d", n, err, tc.total)
			}
		})
	}
	users, _, err := s.Users(ctx, accounts.UserFilter{Status: auth.StatusSuspended, Now: now}, 0, 1)
	if err != nil || len(users) != 1 {
		t.Fatal(users, err)
	}
	if u := users[0]; u.LastName != `a.*b(c$d\e` || u.TimeoutUntil == nil || !u.TimeoutUntil.Equal(now.Add(time.Hour)) ||
		*u.TimeoutReason != "cool off" || u.StatusAt(now) != auth.StatusSuspended || u.CreatedAt.Location() != time.UTC {
		t.Fatalf("listed user = %+v", u)
	}
}

// The list's order and its filters are served by indexes.
func TestUserListIndexes(t *testing.T) {
	s := newStore(t)
	specs, err := s.users.Indexes().ListSpecifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, sp := range specs {
		keys[sp.Name] = sp.KeysDocument.String()
	}
	for name, want := range map[string]string{
		"created_at":    `{"created_at": {"$numberInt":"-1"},"_id": {"$numberInt":"-1"}}`,
		"role":          `{"role": {"$numberInt":"1"}}`,
		"status":        `{"status": {"$numberInt":"1"}}`,
		"timeout_until": `{"timeout_until": {"$numberInt":"1"}}`,
	} {
		if keys[name] != want {
			t.Errorf("index %s = %s; want %s", name, keys[name], want)
		}
	}
}

// A timeout, a ban and an unban in turn, each a compare-and-set over the standing before it,
// and an undo that restores a standing exactly.
func TestSetStandingRoundTrip(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.InsertUser(ctx, user("u1", "ada@example.com")); err != nil {
		t.Fatal(err)
	}
	now := ms(time.Now())
	clean := accounts.Standing{Status: auth.StatusActive}
	timedOut := accounts.Standing{Status: auth.StatusActive, TimeoutUntil: ptr(now.Add(time.Hour)), TimeoutReason: ptr("cool off")}
	banned := timedOut
	banned.Status, banned.BanReason = auth.StatusBanned, ptr("spam")

	step := func(name string, from, to accounts.Standing, at time.Time, want bool) {
		t.Helper()
		if ok, err := s.SetStanding(ctx, "u1", from, to, at); err != nil || ok != want {
			t.Fatalf("%s = %v, %v; want %v", name, ok, err, want)
		}
	}
	check := func(name string, want accounts.Standing, updated time.Time, absent ...string) {
		t.Helper()
		got, err := s.UserByID(ctx, "u1")
		if err != nil || !sameStanding(got.Standing(), want) || !got.UpdatedAt.Equal(updated) || got.StatusAt(now) != wantStatus(want, now) {
			t.Fatalf("%s: stored %+v (%v); want %+v updated %v", name, got, err, want, updated)
		}
		raw, err := s.users.FindOne(ctx, byID("u1")).Raw()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range absent {
			if _, err := raw.LookupErr(f); err == nil {
				t.Fatalf("%s: field %s still stored", name, f)
			}
		}
	}

	step("timeout", clean, timedOut, now.Add(time.Second), true)
	check("timeout", timedOut, now.Add(time.Second), "ban_reason")
	step("stale write", clean, banned, now.Add(2*time.Second), false)
	check("stale write", timedOut, now.Add(time.Second))
	step("ban", timedOut, banned, now.Add(3*time.Second), true)
	check("ban", banned, now.Add(3*time.Second))
	staleStatus := banned
	staleStatus.Status = auth.StatusActive // every other field as stored
	step("stale status", staleStatus, clean, now.Add(4*time.Second), false)
	check("stale status", banned, now.Add(3*time.Second))
	step("unban", banned, clean, now.Add(4*time.Second), true)
	check("unban", clean, now.Add(4*time.Second), "ban_reason", "timeout_until", "timeout_reason")
	// The undo of the unban: the ban comes back exactly, updated_at included.
	step("undo", clean, banned, now.Add(3*time.Second), true)
	check("undo", banned, now.Add(3*time.Second))
	step("undo again", clean, banned, now, false)

	// A field stored as null reads as unset, and is matched as such.
	if _, err := s.users.UpdateOne(ctx, byID("u1"), bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: auth.StatusActive},
		{Key: "ban_reason", Value: nil}, {Key: "timeout_until", Value: nil}, {Key: "timeout_reason", Value: nil}}}}); err != nil {
		t.Fatal(err)
	}
	step("over nulls", clean, timedOut, now, true)
	check("over nulls", timedOut, now)

	if ok, err := s.SetStanding(ctx, "missing", clean, banned, now); err != nil || ok {
		t.Fatalf("standing of a missing user = %v, %v", ok, err)
	}
}

func wantStatus(st accounts.Standing, now time.Time) string {
	return accounts.User{Status: st.Status, TimeoutUntil: st.TimeoutUntil}.StatusAt(now)
}

func sameStanding(a, b accounts.Standing) bool {
	eqS := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqT := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	return a.Status == b.Status && eqS(a.BanReason, b.BanReason) && eqS(a.TimeoutReason, b.TimeoutReason) &&
		eqT(a.TimeoutUntil, b.TimeoutUntil)
}

// Logins stamping an account while it is banned, on the real wire server: the ban stays,
// as a stamp sets only last_login_at and never writes back a standing it did not change.
func TestStampsDoNotUndoABan(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t), testRetention)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for round := range 5 {
		id := fmt.Sprintf("stamp%d", round)
		if err := s.InsertUser(ctx, accounts.User{ID: id, Email: id + "@example.com", Role: auth.RoleUser, Status: auth.StatusActive,
			AuthProvider: auth.ProviderEmail, QuotaLimit: 100, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 5 {
					if err := s.SetLastLogin(ctx, id, time.Now()); err != nil {
						t.Error(err)
					}
				}
			})
		}
		reason := "spam"
		ok, err := s.SetStanding(ctx, id, accounts.Standing{Status: auth.StatusActive},
			accounts.Standing{Status: auth.StatusBanned, BanReason: &reason}, now)
		wg.Wait()
		if err != nil || !ok {
			t.Fatalf("ban: %v %v", ok, err)
		}
		u, err := s.UserByID(ctx, id)
		if err != nil || u.Status != auth.StatusBanned || u.LastLoginAt == nil {
			t.Fatalf("round %d: status %q, last login %v, %v", round, u.Status, u.LastLoginAt, err)
		}
	}
}
