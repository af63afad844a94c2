package authtest

import (
	"context"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/store"
)

// The seam sets the status fields through the auth store, so the account reads back
// banned or suspended as the service derives it.
func TestRestrict(t *testing.T) {
	ctx := context.Background()
	db := testenv.Mongo(t)
	st, err := store.New(ctx, db, 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, id := range []string{"u1", "u2"} {
		u := accounts.User{ID: id, Email: id + "@example.com", FirstName: "A", LastName: "B", Role: "user", Status: "active",
			AuthProvider: "email", QuotaLimit: 100, CreatedAt: now, UpdatedAt: now}
		if err := st.InsertUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	reason, until := "spam", now.Add(time.Hour)
	if err := Restrict(ctx, db, "u1", Restriction{Status: "banned", BanReason: &reason}); err != nil {
		t.Fatal(err)
	}
	limit := 3
	if err := Restrict(ctx, db, "u2", Restriction{TimeoutUntil: &until, QuotaLimit: &limit}); err != nil {
		t.Fatal(err)
	}
	u1, err := st.UserByID(ctx, "u1")
	if err != nil || u1.Status != "banned" || u1.BanReason == nil || *u1.BanReason != "spam" {
		t.Fatalf("u1 = %+v, %v", u1, err)
	}
	u2, err := st.UserByID(ctx, "u2")
	if err != nil || u2.TimeoutUntil == nil || !u2.TimeoutUntil.Equal(until) || u2.StatusAt(now) != "suspended" || u2.QuotaLimit != 3 {
		t.Fatalf("u2 = %+v, %v", u2, err)
	}
	if err := Restrict(ctx, db, "nobody", Restriction{Status: "banned"}); err == nil {
		t.Fatal("an unknown account was accepted")
	}
}
