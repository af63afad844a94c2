package accounts_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/mail"
)

// memStore keeps accounts in memory for the rule tests that need no database. The methods
// those tests never reach are left to the nil embedded Store: calling one panics, which
// fails the test rather than passing it by accident.
type memStore struct {
	accounts.Store
	mu    sync.Mutex
	users map[string]accounts.User
	// beforeStanding, when set, runs once before the next standing write (another
	// moderator's write landing between our read and our write).
	beforeStanding func(m *memStore)
	writes         int
}

func newMemStore(users ...accounts.User) *memStore {
	m := &memStore{users: map[string]accounts.User{}}
	for _, u := range users {
		m.users[u.ID] = u
	}
	return m
}

func (m *memStore) UserByID(_ context.Context, id string) (accounts.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok {
		return accounts.User{}, accounts.ErrUserNotFound
	}
	return u, nil
}

func (m *memStore) get(t *testing.T, id string) accounts.User {
	t.Helper()
	u, err := m.UserByID(context.Background(), id)
	if err != nil {
		t.Fatalf("user %s: %v", id, err)
	}
	return u
}

func (m *memStore) SetStanding(_ context.Context, id string, from, to accounts.Standing, at time.Time) (bool, error) {
	if hook := m.takeHook(); hook != nil {
		hook(m)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok || !sameStanding(u.Standing(), from) {
		return false, nil
	}
	m.writes++
	u.Status, u.BanReason, u.TimeoutUntil, u.TimeoutReason, u.UpdatedAt = to.Status, to.BanReason, to.TimeoutUntil, to.TimeoutReason, at
	m.users[id] = u
	return true, nil
}

func (m *memStore) takeHook() func(*memStore) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.beforeStanding
	m.beforeStanding = nil
	return h
}

func (m *memStore) SetRole(_ context.Context, id, from, to string, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok || u.Role != from {
		return false, nil
	}
	m.writes++
	u.Role, u.UpdatedAt = to, now
	m.users[id] = u
	return true, nil
}

// CountUsers knows the filters the account rules count by: role and status.
func (m *memStore) CountUsers(_ context.Context, f accounts.UserFilter) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, u := range m.users {
		if (f.Role == "" || u.Role == f.Role) && (f.Status == "" || u.StatusAt(f.Now) == f.Status) {
			n++
		}
	}
	return n, nil
}

// sameStanding compares standings by value, as the real store's filter does.
func sameStanding(a, b accounts.Standing) bool {
	return a.Status == b.Status && sameString(a.BanReason, b.BanReason) && sameString(a.TimeoutReason, b.TimeoutReason) &&
		sameTime(a.TimeoutUntil, b.TimeoutUntil)
}

func sameString(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func sameTime(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }

// sameUser compares everything a moderation action may touch, and the rest by value.
func sameUser(a, b accounts.User) bool {
	return sameStanding(a.Standing(), b.Standing()) && a.UpdatedAt.Equal(b.UpdatedAt) && a.Role == b.Role &&
		a.ID == b.ID && a.Email == b.Email && a.QuotaLimit == b.QuotaLimit
}

// plainHasher stands in for argon2 where no password is ever checked.
type plainHasher struct{}

func (plainHasher) Hash(_ context.Context, pw string) (string, error) { return "plain:" + pw, nil }

func (plainHasher) Check(_ context.Context, pw, encoded string) (bool, bool, error) {
	return encoded == "plain:"+pw, false, nil
}

// unit is a Service over memStore, a fake audit log and a fake link service.
type unit struct {
	svc   *accounts.Service
	store *memStore
	audit *fakeAudit
	links *fakeLinks
	clock *clock
}

func newUnit(t *testing.T, users ...accounts.User) *unit {
	t.Helper()
	u := &unit{store: newMemStore(users...), audit: &fakeAudit{}, links: newFakeLinks(), clock: &clock{t: unitEpoch}}
	svc, err := accounts.New(context.Background(), accounts.Options{Store: u.store, Hasher: plainHasher{},
		Audit: u.audit, Links: u.links, SessionTTL: time.Hour, Now: u.clock.Now, Mail: noMail{}})
	if err != nil {
		t.Fatal(err)
	}
	u.svc = svc
	return u
}

// unitEpoch is the unit tests' "now"; accounts are created an hour before it.
var unitEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// account is a stored account of role, active, created an hour before unitEpoch.
func account(id, role string) accounts.User {
	created := unitEpoch.Add(-time.Hour)
	return accounts.User{ID: id, Email: strings.ToLower(id) + "@example.com", FirstName: "F", LastName: id,
		AuthProvider: auth.ProviderEmail, Role: role, Status: auth.StatusActive, QuotaLimit: 100,
		CreatedAt: created, UpdatedAt: created}
}

func ptr[T any](v T) *T { return &v }

// noMail is the unit tests' outbox: their rules send no mail.
type noMail struct{}

func (noMail) Enqueue(context.Context, string, mail.Message) error {
	return errors.New("the unit tests send no mail")
}

func (noMail) Forget(context.Context, string) error { return nil }
