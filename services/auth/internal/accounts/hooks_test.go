package accounts_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
)

var errInjected = errors.New("injected store failure")

// hookStore is the real store with failures and interleavings injected where a test needs
// them.
type hookStore struct {
	accounts.Store
	mu sync.Mutex
	// afterUserByEmail runs once, after the next UserByEmail has read the account.
	afterUserByEmail                                       func()
	failInsertSession, failSetLastLogin, failSuccessRecord bool
}

func (h *hookStore) UserByEmail(ctx context.Context, email string) (accounts.User, error) {
	u, err := h.Store.UserByEmail(ctx, email)
	h.mu.Lock()
	hook := h.afterUserByEmail
	h.afterUserByEmail = nil
	h.mu.Unlock()
	if hook != nil {
		hook()
	}
	return u, err
}

func (h *hookStore) InsertSession(ctx context.Context, s accounts.Session) error {
	if h.failInsertSession {
		return errInjected
	}
	return h.Store.InsertSession(ctx, s)
}

func (h *hookStore) SetLastLogin(ctx context.Context, userID string, at time.Time) error {
	if h.failSetLastLogin {
		return errInjected
	}
	return h.Store.SetLastLogin(ctx, userID, at)
}

func (h *hookStore) InsertLoginRecord(ctx context.Context, r accounts.LoginRecord) error {
	if h.failSuccessRecord && r.Success {
		return errInjected
	}
	return h.Store.InsertLoginRecord(ctx, r)
}

// fakeIDP accepts the tokens it was given, each for its identity.
type fakeIDP map[string]idp.Identity

func (f fakeIDP) Enabled() bool { return true }

func (f fakeIDP) Verify(_ context.Context, raw string) (idp.Identity, error) {
	if id, ok := f[raw]; ok {
		return id, nil
	}
	return idp.Identity{}, idp.ErrInvalidToken
}

// countingHasher counts the hashes made, to show which paths make none.
type countingHasher struct {
	accounts.PasswordHasher
	hashes atomic.Int32
}

func (c *countingHasher) Hash(ctx context.Context, pw string) (string, error) {
	c.hashes.Add(1)
	return c.PasswordHasher.Hash(ctx, pw)
}

func withStore(s accounts.Store) option { return func(o *accounts.Options) { o.Store = s } }
func withIDP(v fakeIDP) option          { return func(o *accounts.Options) { o.IDP = v } }
func withHasher(h accounts.PasswordHasher) option {
	return func(o *accounts.Options) { o.Hasher = h }
}
