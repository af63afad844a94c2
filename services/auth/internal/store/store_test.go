package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	db := testenv.Mongo(t)
	s, err := New(context.Background(), db, testRetention)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), db, testRetention); err != nil {
		t.Fatalf("index creation must be idempotent: %v", err)
	}
	return s
}

// testRetention is the login record retention of the tests' stores.
const testRetention = 90 * 24 * time.Hour

// ms is a time that survives MongoDB's millisecond precision unchanged.
func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

func user(id, email string) accounts.User {
	now := ms(time.Now())
	return accounts.User{ID: id, Email: email, FirstName: "Ada", LastName: "Lovelace", PasswordHash: "$argon2id$x",
		AuthProvider: auth.ProviderEmail, Role: auth.RoleUser, Status: auth.StatusActive, QuotaLimit: 100,
		CreatedAt: now, UpdatedAt: now}
}

func TestUserRoundTrip(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	until := ms(time.Now().Add(time.Hour))
	reason := "spam"
	u := user("u1", "ada@example.com")
	u.TimeoutUntil, u.TimeoutReason, u.IDPUID = &until, &reason, "sub-1"
	if err := s.InsertUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	for name, find := range map[string]func() (accounts.User, error){
		"id":      func() (accounts.User, error) { return s.UserByID(ctx, "u1") },
		"email":   func() (accounts.User, error) { return s.UserByEmail(ctx, "ada@example.com") },
		"idp_uid": func() (accounts.User, error) { return s.UserByIDPUID(ctx, "sub-1") },
	} {
		got, err := find()
		if err != nil {
			t.Fatalf("by %s: %v", name, err)
		}
		if got.ID != u.ID || got.Email != u.Email || got.PasswordHash != u.PasswordHash || got.IDPUID != "sub-1" ||
			!got.CreatedAt.Equal(u.CreatedAt) || got.TimeoutUntil == nil || !got.TimeoutUntil.Equal(until) ||
			*got.TimeoutReason != reason || got.BanReason != nil || got.LastLoginAt != nil || got.QuotaLimit != 100 {
			t.Fatalf("by %s: round trip changed the user: %+v", name, got)
		}
	}
	for name, err := range map[string]error{
		"unknown id":    func() error { _, err := s.UserByID(ctx, "nope"); return err }(),
		"unknown email": func() error { _, err := s.UserByEmail(ctx, "nope@example.com"); return err }(),
		"unknown sub":   func() error { _, err := s.UserByIDPUID(ctx, "sub-2"); return err }(),
		"empty sub":     func() error { _, err := s.UserByIDPUID(ctx, ""); return err }(),
	} {
		if !errors.Is(err, accounts.ErrUserNotFound) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Accounts without a password or idp_uid store no such field at all.
	plain := user("u2", "bob@example.com")
	plain.PasswordHash = ""
	if err := s.InsertUser(ctx, plain); err != nil {
		t.Fatal(err)
	}
	raw, err := s.users.FindOne(ctx, byID("u2")).Raw()
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"password_hash", "idp_uid", "timeout_until", "last_login_at"} {
		if _, err := raw.LookupErr(field); err == nil {
			t.Errorf("field %s stored although unset", field)
		}
	}
}

// The unique index, not a read-then-write, decides who registers an e-mail.
func TestConcurrentRegistrationOfOneEmail(t *testing.T) {
	s := newStore(t)
	var won, taken atomic.Int32
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			err := s.InsertUser(context.Background(), user(fmt.Sprintf("u%d", i), "race@example.com"))
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, accounts.ErrEmailTaken):
				taken.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 || taken.Load() != 11 {
		t.Fatalf("%d registrations won, %d lost; want 1 and 11", won.Load(), taken.Load())
	}
}

func TestConditionalUpdates(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.InsertUser(ctx, user("u1", "ada@example.com")); err != nil {
		t.Fatal(err)
	}
	now := ms(time.Now().Add(time.Minute))
	if ok, err := s.SetRole(ctx, "u1", auth.RoleModerator, auth.RoleSuperAdmin, now); err != nil || ok {
		t.Fatalf("set role from a stale role = %v, %v; want refused", ok, err)
	}
	if ok, err := s.SetRole(ctx, "u1", auth.RoleUser, auth.RoleSuperAdmin, now); err != nil || !ok {
		t.Fatalf("set role = %v, %v", ok, err)
	}
	if n, err := s.CountUsers(ctx, accounts.UserFilter{Role: auth.RoleSuperAdmin}); err != nil || n != 1 {
		t.Fatalf("count = %d, %v", n, err)
	}
	if err := s.SetLastLogin(ctx, "u1", now); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.SetPasswordHash(ctx, "u1", "$argon2id$stale", "$argon2id$other", now); err != nil || ok {
		t.Fatalf("replace a hash the account does not have = %v, %v; want refused", ok, err)
	}
	if ok, err := s.SetPasswordHash(ctx, "u1", "$argon2id$x", "$argon2id$new", now); err != nil || !ok {
		t.Fatalf("replace the current hash = %v, %v", ok, err)
	}
	got, err := s.UserByID(ctx, "u1")
	if err != nil || got.Role != auth.RoleSuperAdmin || !got.UpdatedAt.Equal(now) ||
		got.LastLoginAt == nil || !got.LastLoginAt.Equal(now) || got.PasswordHash != "$argon2id$new" {
		t.Fatalf("after updates: %+v, %v", got, err)
	}
	if ok, err := s.SetRole(ctx, "missing", auth.RoleUser, auth.RoleModerator, now); err != nil || ok {
		t.Fatalf("set role of a missing user = %v, %v", ok, err)
	}
}

func TestSessions(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := ms(time.Now())
	live := accounts.Session{Hash: "h-live", UserID: "u1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	expired := accounts.Session{Hash: "h-expired", UserID: "u1", CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour)}
	for _, sess := range []accounts.Session{live, expired} {
		if err := s.InsertSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.SessionByHash(ctx, "h-live", now)
	if err != nil || got != live {
		t.Fatalf("live session = %+v, %v", got, err)
	}
	// Expired sessions are never returned, deleted by the TTL index yet or not; expiry is
	// exclusive.
	for _, at := range []time.Time{now, live.ExpiresAt} {
		hash := "h-expired"
		if at.Equal(live.ExpiresAt) {
			hash = "h-live"
		}
		if _, err := s.SessionByHash(ctx, hash, at); !errors.Is(err, accounts.ErrSessionNotFound) {
			t.Fatalf("%s at %v: %v; want not found", hash, at, err)
		}
	}
	if err := s.DeleteSession(ctx, "h-live"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionByHash(ctx, "h-live", now); !errors.Is(err, accounts.ErrSessionNotFound) {
		t.Fatalf("revoked session: %v", err)
	}
	if err := s.DeleteSession(ctx, "h-live"); err != nil {
		t.Fatalf("revoking twice: %v", err)
	}
}

// Linking is one conditional update: subject, provider, no password, a raised session epoch.
func TestLinkIDP(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.InsertUser(ctx, user("u1", "ada@example.com")); err != nil {
		t.Fatal(err)
	}
	now := ms(time.Now().Add(time.Minute))
	if ok, err := s.LinkIDP(ctx, "u1", "sub-1", now); err != nil || !ok {
		t.Fatalf("first link = %v, %v", ok, err)
	}
	got, err := s.UserByID(ctx, "u1")
	if err != nil || got.IDPUID != "sub-1" || got.AuthProvider != auth.ProviderGoogle || got.PasswordHash != "" ||
		got.SessionEpoch != 1 || !got.UpdatedAt.Equal(now) || got.Email != "ada@example.com" || got.Role != auth.RoleUser {
		t.Fatalf("linked user = %+v, %v", got, err)
	}
	raw, err := s.users.FindOne(ctx, byID("u1")).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.LookupErr("password_hash"); err == nil {
		t.Fatal("the password hash is still stored after linking")
	}
	// A second link, of any subject, changes nothing: not the subject, not the epoch.
	for _, sub := range []string{"sub-2", "sub-1"} {
		if ok, err := s.LinkIDP(ctx, "u1", sub, now.Add(time.Minute)); err != nil || ok {
			t.Fatalf("link again to %s = %v, %v; want refused", sub, ok, err)
		}
	}
	if got, _ := s.UserByID(ctx, "u1"); got.IDPUID != "sub-1" || got.SessionEpoch != 1 || !got.UpdatedAt.Equal(now) {
		t.Fatalf("after refused links: %+v", got)
	}
	// A rehash racing the link cannot bring the password back.
	if ok, err := s.SetPasswordHash(ctx, "u1", "$argon2id$x", "$argon2id$new", now); err != nil || ok {
		t.Fatalf("rehash after linking = %v, %v; want refused", ok, err)
	}
	if ok, err := s.LinkIDP(ctx, "missing", "sub-3", now); err != nil || ok {
		t.Fatalf("link a missing user = %v, %v", ok, err)
	}
}

func TestDeleteSessionsByUser(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := ms(time.Now())
	for i, owner := range []string{"u1", "u1", "u1", "u2"} {
		sess := accounts.Session{Hash: fmt.Sprintf("h%d", i), UserID: owner, CreatedAt: now, ExpiresAt: now.Add(time.Hour), Epoch: int64(i)}
		if err := s.InsertSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.SessionByHash(ctx, "h2", now); err != nil || got.Epoch != 2 {
		t.Fatalf("session epoch round trip = %+v, %v", got, err)
	}
	if n, err := s.DeleteSessionsByUser(ctx, "u1"); err != nil || n != 3 {
		t.Fatalf("deleted %d, %v; want u1's 3", n, err)
	}
	for hash, want := range map[string]error{"h0": accounts.ErrSessionNotFound, "h2": accounts.ErrSessionNotFound, "h3": nil} {
		if _, err := s.SessionByHash(ctx, hash, now); !errors.Is(err, want) {
			t.Errorf("%s: %v; want %v", hash, err, want)
		}
	}
	if n, err := s.DeleteSessionsByUser(ctx, "u1"); err != nil || n != 0 {
		t.Fatalf("deleting again = %d, %v", n, err)
	}
}
