package accounts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

func TestBootstrapIsIdempotent(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for range 2 {
		if err := e.svc.Bootstrap(ctx, " Root@Example.com ", "root-password"); err != nil {
			t.Fatal(err)
		}
	}
	n, _ := e.db.Collection("users").CountDocuments(ctx, bson.D{})
	u, err := e.store.UserByEmail(ctx, "root@example.com")
	if err != nil || n != 1 || u.Role != auth.RoleSuperAdmin || u.AuthProvider != auth.ProviderEmail || u.Status != auth.StatusActive {
		t.Fatalf("after two runs: %d users, %+v, %v", n, u, err)
	}
	if _, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "root@example.com", Password: "root-password"}); err != nil {
		t.Fatalf("the bootstrap admin cannot log in: %v", err)
	}
	if n := len(e.audit.all()); n != 0 {
		t.Fatalf("creating the bootstrap admin wrote %d audit entries; it is start-up, not an admin's action", n)
	}
}

// logLines decodes the JSON log lines the service wrote to buf.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// An existing account keeps its password. It becomes a super admin only if its password is
// the configured one: whoever registered the address first must not get the role. A refusal
// is logged and start-up goes on.
func TestBootstrapExistingAccount(t *testing.T) {
	const email, bootstrapPW = "root@example.com", "r\u00f4ot-password"
	noPassword := func(t *testing.T, e *env) string {
		now := e.clock.Now()
		u := accounts.User{ID: "g1", Email: email, FirstName: "G", LastName: "G", AuthProvider: auth.ProviderGoogle, IDPUID: "sub-g",
			Role: auth.RoleUser, Status: auth.StatusActive, QuotaLimit: 100, CreatedAt: now, UpdatedAt: now}
		if err := e.store.InsertUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
		return ""
	}
	registered := func(pw, role string) func(t *testing.T, e *env) string {
		return func(t *testing.T, e *env) string {
			s, err := e.svc.Register(context.Background(), caller("", ""), auth.RegisterRequest{Email: email, Password: pw, FirstName: "R", LastName: "R"})
			if err != nil {
				t.Fatal(err)
			}
			if role != auth.RoleUser {
				if ok, err := e.store.SetRole(context.Background(), s.User.ID, auth.RoleUser, role, e.clock.Now()); err != nil || !ok {
					t.Fatalf("set role: %v %v", ok, err)
				}
			}
			return pw
		}
	}
	cases := []struct {
		name string
		// setup creates the account and returns the password it can log in with ("" none).
		setup    func(t *testing.T, e *env) string
		wantRole string
		promoted bool
		wantLog  string // level:message of the one log line expected ("" none)
	}{
		{"user with the bootstrap password", registered(bootstrapPW, auth.RoleUser), auth.RoleSuperAdmin, true, ""},
		{"moderator with the bootstrap password", registered(bootstrapPW, auth.RoleModerator), auth.RoleSuperAdmin, true, ""},
		// Typed with a combining circumflex at registration, configured precomposed.
		{"user with the bootstrap password in NFD", registered("ro\u0302ot-password", auth.RoleUser), auth.RoleSuperAdmin, true, ""},
		{"user registered first by someone else", registered("attacker-password", auth.RoleUser), auth.RoleUser, false,
			"ERROR:bootstrap admin not promoted: an account with this e-mail exists and the configured bootstrap password is not its password"},
		{"identity provider account without a password", noPassword, auth.RoleUser, false,
			"ERROR:bootstrap admin not promoted: an account with this e-mail exists and the configured bootstrap password is not its password"},
		{"super admin with the bootstrap password", registered(bootstrapPW, auth.RoleSuperAdmin), auth.RoleSuperAdmin, false, ""},
		{"super admin with another password", registered("changed-password", auth.RoleSuperAdmin), auth.RoleSuperAdmin, false,
			"WARN:bootstrap password ignored for an existing account"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			loginPW := tc.setup(t, e)
			var logs bytes.Buffer
			svc := e.service(t, func(o *accounts.Options) { o.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
			for range 2 { // idempotent: the second start changes and logs nothing new
				if err := svc.Bootstrap(ctx, email, bootstrapPW); err != nil {
					t.Fatalf("Bootstrap = %v; start-up must go on", err)
				}
			}
			u, err := e.store.UserByEmail(ctx, email)
			if err != nil || u.Role != tc.wantRole {
				t.Fatalf("role = %q, %v; want %q", u.Role, err, tc.wantRole)
			}
			// The promotion is logged once (the second start finds a super admin), and never
			// written to the audit log, which no caller's token could name an actor for.
			var got []string
			promotions := 0
			for _, l := range logLines(t, &logs) {
				if l["level"] == "INFO" {
					if l["msg"] == "promoted the bootstrap admin to super admin" {
						promotions++
						if l["user_id"] != u.ID || l["from"] == nil || l["from"] == auth.RoleSuperAdmin {
							t.Errorf("the promotion line does not name the account and its old role: %v", l)
						}
					}
					continue
				}
				got = append(got, fmt.Sprint(l["level"], ":", l["msg"]))
				if l["email"] != email || l["user_id"] != u.ID {
					t.Errorf("the log line does not name the account: %v", l)
				}
			}
			if want := []string{tc.wantLog, tc.wantLog}; tc.wantLog == "" && len(got) != 0 || tc.wantLog != "" && fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("logs = %q; want %q at each start", got, tc.wantLog)
			}
			if tc.promoted != (promotions == 1) || promotions > 1 {
				t.Errorf("%d promotions logged; promoted want %v", promotions, tc.promoted)
			}
			if n := len(e.audit.all()); n != 0 {
				t.Errorf("the bootstrap wrote %d audit entries", n)
			}
			if strings.Contains(logs.String(), "ot-password") {
				t.Fatal("a password reached the logs")
			}
			// The account's own password still works, and only that one.
			if loginPW != "" {
				if _, err := svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: email, Password: loginPW}); err != nil {
					t.Fatalf("the account's password stopped working: %v", err)
				}
			}
			if tc.wantLog != "" { // the bootstrap password is not this account's
				_, err := svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: email, Password: bootstrapPW})
				wantErr(t, err, errs.KindUnauthenticated, "invalid email or password")
			}
		})
	}
}

// Replicas starting at once: exactly one account, a super admin, and no replica fails.
func TestBootstrapConcurrently(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	replicas := make([]*accounts.Service, 6)
	for i := range replicas {
		replicas[i] = e.service(t)
	}
	var wg sync.WaitGroup
	errsOut := make([]error, len(replicas))
	for i, r := range replicas {
		wg.Go(func() { errsOut[i] = r.Bootstrap(ctx, "root@example.com", "root-password") })
	}
	wg.Wait()
	for i, err := range errsOut {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}
	n, _ := e.db.Collection("users").CountDocuments(ctx, bson.D{{Key: "email", Value: "root@example.com"}})
	admins, _ := e.store.CountUsers(ctx, accounts.UserFilter{Role: auth.RoleSuperAdmin})
	if n != 1 || admins != 1 {
		t.Fatalf("%d accounts, %d super admins; want 1 and 1", n, admins)
	}
}

func TestBootstrapRejectsBadSettings(t *testing.T) {
	e := newEnv(t)
	for _, tc := range [][2]string{{"not-an-email", "root-password"}, {"root@example.com", "short"}} {
		if err := e.svc.Bootstrap(context.Background(), tc[0], tc[1]); err == nil {
			t.Errorf("Bootstrap(%q, %q) accepted", tc[0], tc[1])
		}
	}
}
