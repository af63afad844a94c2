package window

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
)

func TestScopeTable(t *testing.T) {
	table := Scopes(Sizes{AnonLimit: 10, AnonWindow: 24 * time.Hour, LoginFailures: 4, LoginFailuresPerEmail: 40,
		LoginFailuresPerClient: 12, LoginWindow: 15 * time.Minute, Registrations: 5, RegisterWindow: time.Hour,
		UserWindow: 720 * time.Hour, TokenRate: 600})
	want := map[string]Policy{
		quota.ScopeAnonymousCreate:  {Limit: 10, Window: 24 * time.Hour, Anonymous: true},
		quota.ScopeLoginEmailClient: {Limit: 4, Window: 15 * time.Minute, Anonymous: true},
		quota.ScopeLoginEmail:       {Limit: 40, Window: 15 * time.Minute, Anonymous: true},
		quota.ScopeLoginIP:          {Limit: 4, Window: 15 * time.Minute, Anonymous: true},
		quota.ScopeLoginClient:      {Limit: 12, Window: 15 * time.Minute, Anonymous: true},
		quota.ScopeRegister:         {Limit: 5, Window: time.Hour, Anonymous: true},
		quota.ScopeResetClient:      {Limit: 10, Window: time.Hour, Anonymous: true},
		quota.ScopeResetEmail:       {Limit: 3, Window: time.Hour, Anonymous: true},
		quota.ScopeVerifyResend:     {Limit: 3, Window: time.Hour},
		quota.ScopeExport:           {Limit: 10, Window: time.Hour},
		quota.ScopeUserCreate:       {Window: 720 * time.Hour, PerCaller: true},
		quota.ScopeReport:           {Limit: 20, Window: time.Hour, Anonymous: true},
		quota.ScopeAPIToken:         {Limit: 600, Window: time.Minute, Ephemeral: true},
	}
	if len(table) != len(want) {
		t.Fatalf("scope table has %d rows, want %d: %+v", len(table), len(want), table)
	}
	for scope, p := range want {
		if got, ok := table[scope]; !ok || got != p {
			t.Errorf("%s = %+v (present %v), want %+v", scope, got, ok, p)
		}
	}
}

// The login scopes count separately from each other and from anonymous creation, each with
// its limit (the per-e-mail ceiling its own) and the login window.
func TestLoginScopesCountOnTheirOwn(t *testing.T) {
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	clock := newClock()
	l := New(Options{Redis: rdb, Ledger: newLedger(), Now: clock.Now,
		Scopes: Scopes(Sizes{AnonLimit: 5, AnonWindow: 24 * time.Hour, LoginFailures: 2, LoginFailuresPerEmail: 3, LoginWindow: 15 * time.Minute})})
	ctx := context.Background()
	reserve := func(scope, key string) Decision {
		t.Helper()
		d, err := l.Reserve(ctx, scope, key)
		if err != nil {
			t.Fatalf("reserve %s: %v", scope, err)
		}
		return d
	}
	for i := range 2 {
		if d := reserve(quota.ScopeLoginEmailClient, "k"); !d.Allowed || d.Limit != 2 || d.Window != 15*time.Minute {
			t.Fatalf("login_email_client unit %d = %+v", i+1, d)
		}
	}
	denied := reserve(quota.ScopeLoginEmailClient, "k")
	if denied.Allowed || denied.RetryAfter != 15*time.Minute {
		t.Fatalf("third login_email_client unit = %+v; want denied for 15m", denied)
	}
	// The per-e-mail ceiling has a limit of its own.
	for i := range 3 {
		if d := reserve(quota.ScopeLoginEmail, "k"); !d.Allowed || d.Limit != 3 || d.Used != i+1 {
			t.Fatalf("login_email unit %d = %+v", i+1, d)
		}
	}
	if d := reserve(quota.ScopeLoginEmail, "k"); d.Allowed {
		t.Fatalf("fourth login_email unit = %+v; want denied", d)
	}
	// The same key in the other scopes is untouched.
	if d := reserve(quota.ScopeLoginIP, "k"); !d.Allowed || d.Used != 1 {
		t.Fatalf("login_ip = %+v", d)
	}
	if d := reserve(quota.ScopeAnonymousCreate, "k"); !d.Allowed || d.Used != 1 || d.Limit != 5 {
		t.Fatalf("anonymous_create = %+v", d)
	}
	// A released unit (a successful login) frees room again.
	clock.Advance(time.Minute)
	if err := l.Release(ctx, quota.ScopeLoginIP, "k", reserve(quota.ScopeLoginIP, "k").ID); err != nil {
		t.Fatal(err)
	}
	if d := reserve(quota.ScopeLoginIP, "k"); !d.Allowed || d.Used != 2 {
		t.Fatalf("login_ip after release = %+v; want allowed as the 2nd unit", d)
	}
	if d := reserve(quota.ScopeLoginIP, "k"); d.Allowed {
		t.Fatalf("login_ip over the limit = %+v; want denied", d)
	}
	clock.Advance(15 * time.Minute)
	for _, scope := range []string{quota.ScopeLoginEmailClient, quota.ScopeLoginEmail} {
		if d := reserve(scope, "k"); !d.Allowed {
			t.Fatalf("%s after the window = %+v; want allowed", scope, d)
		}
	}
}
