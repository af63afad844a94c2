package app_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/httpclient"
	"github.com/linkmesh/linkmesh/pkg/identity"
	pkgservice "github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/quota/internal/app"
	"github.com/linkmesh/linkmesh/services/quota/internal/config"
)

type service struct {
	*testenv.Booted
	base   string
	client *quota.Client
	token  string // a token addressed to quota for an anonymous caller
	anon   context.Context
	logs   *testenv.LogBuffer
}

// boot starts the service in-process through the production boot path against the real
// datastores and stops it when the test ends.
func boot(t *testing.T) *service {
	t.Helper()
	cfg := &config.Config{}
	b := testenv.Boot(t, pkgservice.For(pkgconfig.Quota, cfg, app.Wire), func() {
		cfg.AnonQuota, cfg.AnonWindow, cfg.LoginMaxFailures, cfg.LoginWindow = 2, time.Hour, 3, 15*time.Minute
		cfg.LoginMaxFailuresPerEmail = 5
	})
	token, err := identity.TokenFor(b.Anonymous(t), pkgconfig.Quota)
	if err != nil {
		t.Fatal(err)
	}
	hc := httpclient.New(httpclient.Options{Service: "quota", BaseURL: b.URL})
	return &service{Booted: b, base: b.URL, client: quota.New(hc), token: token, anon: b.Anonymous(t), logs: b.Logs}
}

func (s *service) ctx() context.Context { return s.anon }

// post sends a raw body with token (none when empty), for what the typed client cannot send.
func (s *service) post(t *testing.T, path, token string, body []byte) (int, string) {
	t.Helper()
	r := s.DoWithToken(t, token, http.MethodPost, path, string(body))
	return r.Status, r.Body
}

func TestReserveReleaseRoundTrip(t *testing.T) {
	s := boot(t)
	key := testenv.Name("ip")
	req := quota.ReserveRequest{Scope: quota.ScopeAnonymousCreate, Key: key}
	first, err := s.client.Reserve(s.ctx(), req)
	if err != nil || !first.Allowed || first.ID == "" || first.Limit != 2 || first.Used != 1 ||
		first.Remaining != 1 || first.WindowSeconds != 3600 || first.ResetsAt.IsZero() {
		t.Fatalf("first reserve = %+v, %v", first, err)
	}
	if r, err := s.client.Reserve(s.ctx(), req); err != nil || !r.Allowed || r.Remaining != 0 {
		t.Fatalf("second reserve = %+v, %v", r, err)
	}
	denied, err := s.client.Reserve(s.ctx(), req)
	if err != nil || denied.Allowed || denied.ID != "" || denied.RetryAfterSeconds < 3590 || denied.RetryAfterSeconds > 3600 {
		t.Fatalf("third reserve = %+v, %v; want denied with Retry-After about an hour", denied, err)
	}
	rel := quota.ReleaseRequest{Scope: quota.ScopeAnonymousCreate, Key: key, ID: first.ID}
	for range 2 { // releasing twice is a no-op the second time
		if err := s.client.Release(s.ctx(), rel); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	if r, err := s.client.Reserve(s.ctx(), req); err != nil || !r.Allowed {
		t.Fatalf("reserve after release = %+v, %v", r, err)
	}
	if r, err := s.client.Reserve(s.ctx(), req); err != nil || r.Allowed {
		t.Fatalf("the double release freed two units: %+v, %v", r, err)
	}
	if code, body := s.post(t, "/internal/quota/release", s.token,
		[]byte(`{"scope":"anonymous_create","key":"`+key+`","id":"`+first.ID+`"}`)); code != 200 || body != `{"status":"released"}` {
		t.Fatalf("release = %d %s", code, body)
	}
	if logs := s.logs.String(); strings.Contains(logs, "PRIVATE KEY") || strings.Contains(logs, s.token) {
		t.Fatalf("the internal key or a token reached the logs: %s", logs)
	}
}

func TestRequestFailures(t *testing.T) {
	s := boot(t)
	reserve := "/internal/quota/reserve"
	good := []byte(`{"scope":"anonymous_create","key":"k"}`)
	big := append([]byte(`{"scope":"anonymous_create","key":"`), bytes.Repeat([]byte("k"), 65*1024)...)
	big = append(big, `"}`...)
	cases := []struct {
		name, path, token string
		body              []byte
		status            int
		message           string
	}{
		{"no token", reserve, "", good, 401, "internal token required"},
		{"bad token", reserve, "not-a-token", good, 401, "internal token invalid"},
		{"release without token", "/internal/quota/release", "", good, 401, "internal token required"},
		{"bad json", reserve, s.token, []byte(`{"scope":`), 400, "request body is not valid JSON"},
		{"wrong type", reserve, s.token, []byte(`{"scope":1,"key":"k"}`), 400, "scope must be a string"},
		{"unknown scope", reserve, s.token, []byte(`{"scope":"nope","key":"k"}`), 400, `scope \"nope\" is unknown`},
		{"long key", reserve, s.token, []byte(`{"scope":"anonymous_create","key":"` + strings.Repeat("k", 129) + `"}`), 400, "key must be at most 128 characters"},
		{"bad id", "/internal/quota/release", s.token, []byte(`{"scope":"anonymous_create","key":"k","id":"x"}`), 400, "id is not a reservation id"},
		{"body over 64 KiB", reserve, s.token, big, 413, "request body exceeds 64 KiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := s.post(t, tc.path, tc.token, tc.body)
			if code != tc.status || body != `{"error":"`+tc.message+`"}` {
				t.Fatalf("got %d %s, want %d %q", code, body, tc.status, tc.message)
			}
		})
	}

	// The typed client surfaces the envelope as an *errs.Error of the right kind.
	_, err := s.client.Reserve(s.ctx(), quota.ReserveRequest{Scope: "nope", Key: "k"})
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid {
		t.Fatalf("typed client error = %v, want a 400 *errs.Error", err)
	}
}

func TestProbes(t *testing.T) {
	s := boot(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(s.base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s = %d, want 200", path, resp.StatusCode)
		}
	}
}

// The login scopes exist with the configured limits and window: 3 per 15 minutes per client
// (with an e-mail or alone), 5 per e-mail over all clients.
func TestLoginScopes(t *testing.T) {
	s := boot(t)
	for scope, limit := range map[string]int{quota.ScopeLoginEmailClient: 3, quota.ScopeLoginIP: 3, quota.ScopeLoginEmail: 5} {
		req := quota.ReserveRequest{Scope: scope, Key: testenv.Name("k")}
		for i := 1; i <= limit; i++ {
			r, err := s.client.Reserve(s.ctx(), req)
			if err != nil || !r.Allowed || r.Limit != limit || r.WindowSeconds != 900 || r.Used != i {
				t.Fatalf("%s reserve %d = %+v, %v", scope, i, r, err)
			}
		}
		r, err := s.client.Reserve(s.ctx(), req)
		if err != nil || r.Allowed || r.RetryAfterSeconds < 890 || r.RetryAfterSeconds > 900 {
			t.Fatalf("%s reserve %d = %+v, %v; want denied for about 15 minutes", scope, limit+1, r, err)
		}
	}
}

// Registered users' creations count per account up to the limit each reservation carries:
// exact under a concurrent burst, a changed limit applies to the next reservation, and a
// Redis that lost its state resets nothing.
func TestUserCreateScope(t *testing.T) {
	s := boot(t)
	user := testenv.Name("user")
	limit := func(n int) *int { return &n }
	req := quota.ReserveRequest{Scope: quota.ScopeUserCreate, Key: user, Limit: limit(100)}
	for i := 1; i <= 90; i++ {
		if r, err := s.client.Reserve(s.ctx(), req); err != nil || !r.Allowed || r.Used != i || r.Limit != 100 || r.WindowSeconds != 720*3600 {
			t.Fatalf("reserve %d = %+v, %v", i, r, err)
		}
	}
	var granted, denied atomic.Int32
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			r, err := s.client.Reserve(s.ctx(), req)
			switch {
			case err != nil:
				t.Errorf("burst reserve: %v", err)
			case r.Allowed:
				granted.Add(1)
			case r.RetryAfterSeconds < 720*3600-120 || r.RetryAfterSeconds > 720*3600:
				t.Errorf("denied with Retry-After %d s; want when the oldest unit leaves the 720h window", r.RetryAfterSeconds)
			default:
				denied.Add(1)
			}
		})
	}
	wg.Wait()
	if granted.Load() != 10 || denied.Load() != 20 {
		t.Fatalf("30 parallel reservations at 90/100 granted %d and denied %d; want exactly 10 and 20", granted.Load(), denied.Load())
	}
	// The limit is the account's, as of each reservation.
	if r, err := s.client.Reserve(s.ctx(), quota.ReserveRequest{Scope: quota.ScopeUserCreate, Key: user, Limit: limit(101)}); err != nil || !r.Allowed || r.Used != 101 {
		t.Fatalf("after raising the limit: %+v, %v", r, err)
	}
	if r, err := s.client.Reserve(s.ctx(), quota.ReserveRequest{Scope: quota.ScopeUserCreate, Key: user, Limit: limit(50)}); err != nil || r.Allowed {
		t.Fatalf("after lowering the limit: %+v, %v", r, err)
	}
	// Redis forgets everything about the counter; the durable record brings it back.
	rdb := testenv.Redis(t)
	base := "quota:{" + quota.ScopeUserCreate + ":" + user + "}"
	if err := rdb.Del(context.Background(), base+":units", base+":hydrated").Err(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.client.Reserve(s.ctx(), quota.ReserveRequest{Scope: quota.ScopeUserCreate, Key: user, Limit: limit(101)}); err != nil || r.Allowed || r.Used != 101 {
		t.Fatalf("after Redis lost the counter: %+v, %v; want all 101 still counted", r, err)
	}
}

// A per-caller scope needs its limit; the others refuse one.
func TestLimitBelongsToPerCallerScopes(t *testing.T) {
	s := boot(t)
	for _, tc := range []struct{ body, msg string }{
		{`{"scope":"user_create","key":"u1"}`, `limit is required for scope \"user_create\"`},
		{`{"scope":"user_create","key":"u1","limit":-1}`, "limit must be between 0 and 1000000"},
		{`{"scope":"anonymous_create","key":"k","limit":5}`, `limit is not accepted for scope \"anonymous_create\"`},
		{`{"scope":"user_create","key":"u1","limit":"5"}`, "limit must be an integer"},
	} {
		code, body := s.post(t, "/internal/quota/reserve", s.token, []byte(tc.body))
		if code != 400 || body != `{"error":"`+tc.msg+`"}` {
			t.Errorf("%s: %d %s, want 400 %q", tc.body, code, body, tc.msg)
		}
	}
}

// Usage reads a counter without taking a unit, rebuilding it from the durable record when
// Redis lost it.
func TestUsage(t *testing.T) {
	s := boot(t)
	user := testenv.Name("user")
	ten := 10
	req := quota.ReserveRequest{Scope: quota.ScopeUserCreate, Key: user, Limit: &ten}
	if u, err := s.client.Usage(s.ctx(), req); err != nil || u.Used != 0 || u.Remaining != 10 || !u.ResetsAt.IsZero() {
		t.Fatalf("usage of an unused counter = %+v, %v", u, err)
	}
	first, err := s.client.Reserve(s.ctx(), req)
	if err != nil || !first.Allowed {
		t.Fatal(first, err)
	}
	for range 3 { // reading takes nothing
		u, err := s.client.Usage(s.ctx(), req)
		if err != nil || u.Used != 1 || u.Remaining != 9 || u.Limit != 10 || u.WindowSeconds != 720*3600 ||
			u.ResetsAt.Sub(time.Now().Add(720*time.Hour)).Abs() > time.Minute {
			t.Fatalf("usage = %+v, %v", u, err)
		}
	}
	rdb := testenv.Redis(t)
	base := "quota:{" + quota.ScopeUserCreate + ":" + user + "}"
	if err := rdb.Del(context.Background(), base+":units", base+":hydrated").Err(); err != nil {
		t.Fatal(err)
	}
	if u, err := s.client.Usage(s.ctx(), req); err != nil || u.Used != 1 {
		t.Fatalf("usage after Redis lost the counter = %+v, %v", u, err)
	}
}
