package accounts_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
	"github.com/linkmesh/linkmesh/services/auth/internal/mail"
	"github.com/linkmesh/linkmesh/services/auth/internal/password"
	"github.com/linkmesh/linkmesh/services/auth/internal/store"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// ipA is a client identity key as the gateway computes it (64 hex characters).
const ipA = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

func caller(userID, role string) identity.Caller {
	c := identity.Caller{UserID: userID, Role: role, IPHash: ipA, UserAgent: "test-agent/1.0"}
	if userID == "" {
		c.Role = identity.RoleAnonymous
	}
	return c
}

// fakeQuota counts units per scope and key like the quota service: at most limit, released
// units free room. down makes every call fail like an unreachable service.
type fakeQuota struct {
	mu       sync.Mutex
	limit    int
	limits   map[string]int             // per scope, overriding limit
	units    map[string]map[string]bool // scope|key → unit ids
	next     int
	down     bool
	reserves int
}

func newFakeQuota(limit int) *fakeQuota {
	return &fakeQuota{limit: limit, limits: map[string]int{}, units: map[string]map[string]bool{}}
}

func (q *fakeQuota) Reserve(_ context.Context, r quota.ReserveRequest) (quota.Reservation, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.down {
		return quota.Reservation{}, errs.Unavailable("quota service unavailable", fmt.Errorf("connection refused"))
	}
	q.reserves++
	k := r.Scope + "|" + r.Key
	if q.units[k] == nil {
		q.units[k] = map[string]bool{}
	}
	limit := q.limit
	if l, ok := q.limits[r.Scope]; ok {
		limit = l
	}
	if len(q.units[k]) >= limit {
		return quota.Reservation{Allowed: false, Limit: limit, Used: len(q.units[k]), RetryAfterSeconds: 600}, nil
	}
	q.next++
	id := fmt.Sprintf("%d-unit", q.next)
	q.units[k][id] = true
	return quota.Reservation{Allowed: true, ID: id, Limit: limit, Used: len(q.units[k])}, nil
}

func (q *fakeQuota) Release(_ context.Context, r quota.ReleaseRequest) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.down {
		return errs.Unavailable("quota service unavailable", fmt.Errorf("connection refused"))
	}
	delete(q.units[r.Scope+"|"+r.Key], r.ID)
	return nil
}

// used returns the units counted for scope and key.
func (q *fakeQuota) used(scope, key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.units[scope+"|"+key])
}

// total returns the units counted over every scope and key.
func (q *fakeQuota) total() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, units := range q.units {
		n += len(units)
	}
	return n
}

func (q *fakeQuota) setDown(down bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.down = down
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	db    *mongo.Database
	store *store.Store
	quota *fakeQuota
	clock *clock
	svc   *accounts.Service
	idp   idp.Config
	audit *fakeAudit
	links *fakeLinks
}

type option func(*accounts.Options)

func newEnv(t *testing.T, opts ...option) *env {
	t.Helper()
	db := testenv.Mongo(t)
	st, err := store.New(context.Background(), db, 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, store: st, quota: newFakeQuota(5), clock: &clock{t: time.Now().UTC().Truncate(time.Millisecond)},
		audit: &fakeAudit{}, links: newFakeLinks()}
	// Tests register their accounts, and fail logins over many e-mails, from one client;
	// the tests of those windows set them low.
	e.quota.limits[quota.ScopeRegister] = 1 << 30
	e.quota.limits[quota.ScopeLoginClient] = 1 << 30
	e.svc = e.service(t, opts...)
	return e
}

// service builds another Service (another replica) over the same database.
func (e *env) service(t *testing.T, opts ...option) *accounts.Service {
	t.Helper()
	// Cheap parameters keep the tests fast; the service reads them from each hash anyway.
	h, err := password.NewHasher(password.Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}, 4)
	if err != nil {
		t.Fatal(err)
	}
	// The real outbox, without a mail server: what the rules send stays in it, to be read.
	outbox, err := mail.NewOutbox(context.Background(), e.db, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := accounts.Options{Store: e.store, Tokens: e.store, Quota: e.quota, IDP: idp.New(e.idp), Hasher: h,
		Audit: e.audit, Links: e.links, SessionTTL: time.Hour, Now: e.clock.Now, Mail: outbox, BaseURL: "https://sho.rt/",
		RequireVerification: true}
	for _, opt := range opts {
		opt(&o)
	}
	svc, err := accounts.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// register creates an e-mail account and returns it.
func (e *env) register(t *testing.T, email string) auth.User {
	t.Helper()
	s, err := e.svc.Register(context.Background(), caller("", ""), auth.RegisterRequest{Email: email, Password: "correct-horse",
		FirstName: "First", LastName: strings.SplitN(email, "@", 2)[0]})
	if err != nil {
		t.Fatalf("register %s: %v", email, err)
	}
	return s.User
}

// superAdmin registers an account and makes it a super admin directly in the store.
func (e *env) superAdmin(t *testing.T, email string) auth.User {
	t.Helper()
	u := e.register(t, email)
	if ok, err := e.store.SetRole(context.Background(), u.ID, auth.RoleUser, auth.RoleSuperAdmin, e.clock.Now()); err != nil || !ok {
		t.Fatalf("make %s a super admin: %v %v", email, ok, err)
	}
	u.Role = auth.RoleSuperAdmin
	return u
}

func wantErr(t *testing.T, err error, kind errs.Kind, msg string) {
	t.Helper()
	if e, ok := errs.As(err); !ok || e.Kind != kind || e.Message != msg {
		t.Fatalf("got %v, want %d %q", err, kind.Status(), msg)
	}
}

func mustHasher(t *testing.T, memory uint32) *password.Hasher {
	t.Helper()
	h, err := password.NewHasher(password.Params{Memory: memory, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}, 4)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// userOf is the user of a validated session.
func userOf(v auth.Validated, err error) (auth.User, error) { return v.User, err }

// markVerified marks the account of email verified, as its owner's opening the mailed link
// would: the tests of a taken address need one that is.
func (e *env) markVerified(t *testing.T, email string) {
	t.Helper()
	u, err := e.store.UserByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.store.MarkVerified(context.Background(), u.ID, u.Email, e.clock.Now()); err != nil || !ok {
		t.Fatalf("mark %s verified: %v %v", email, ok, err)
	}
}
