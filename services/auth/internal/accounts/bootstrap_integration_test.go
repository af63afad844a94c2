package accounts_test

import (
	"context"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
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
	if len(roleChanges(t, e)) != 0 {
		t.Fatal("creating the bootstrap admin is not a role change")
	}
}

// An existing account is promoted, keeps its password and gets a role change record.
func TestBootstrapPromotesWithoutResettingPassword(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	u := e.register(t, "root@example.com") // password "correct-horse"
	if err := e.svc.Bootstrap(ctx, "root@example.com", "another-password"); err != nil {
		t.Fatal(err)
	}
	got, _ := e.store.UserByID(ctx, u.ID)
	if got.Role != auth.RoleSuperAdmin {
		t.Fatalf("role = %s", got.Role)
	}
	if _, err := e.svc.Login(ctx, caller("", ""), auth.LoginRequest{Email: "root@example.com", Password: "correct-horse"}); err != nil {
		t.Fatalf("the old password stopped working: %v", err)
	}
	rc := roleChanges(t, e)
	if len(rc) != 1 || rc[0].ActorID != accounts.BootstrapActor || rc[0].FromRole != auth.RoleUser || rc[0].ToRole != auth.RoleSuperAdmin {
		t.Fatalf("role changes = %+v", rc)
	}
	if err := e.svc.Bootstrap(ctx, "root@example.com", "another-password"); err != nil || len(roleChanges(t, e)) != 1 {
		t.Fatalf("second run: %v, %d records", err, len(roleChanges(t, e)))
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
	admins, _ := e.store.CountRole(ctx, auth.RoleSuperAdmin)
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
