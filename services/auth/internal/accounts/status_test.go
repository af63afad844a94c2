package accounts

import (
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

func TestStatusDerivation(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	until := now.Add(time.Hour)
	past := now.Add(-time.Second)
	cases := []struct {
		name   string
		u      User
		at     time.Time
		status string
		reason string
		msg    string
	}{
		{"active", User{Status: auth.StatusActive}, now, auth.StatusActive, "", ""},
		{"empty stored status reads active", User{}, now, auth.StatusActive, "", ""},
		{"banned", User{Status: auth.StatusBanned}, now, auth.StatusBanned, ReasonBanned, "account is banned"},
		{"banned wins over a timeout", User{Status: auth.StatusBanned, TimeoutUntil: &until}, now, auth.StatusBanned, ReasonBanned, "account is banned"},
		{"suspended", User{Status: auth.StatusActive, TimeoutUntil: &until}, now, auth.StatusSuspended, ReasonSuspended,
			"account is suspended until 2026-11-21T13:00:00Z"},
		{"suspended until the last instant", User{TimeoutUntil: &until}, until.Add(-time.Nanosecond), auth.StatusSuspended, ReasonSuspended,
			"account is suspended until 2026-11-21T13:00:00Z"},
		// A suspension ends by itself: nothing is written, time passing is enough.
		{"active again at timeout_until", User{TimeoutUntil: &until}, until, auth.StatusActive, "", ""},
		{"active after a past timeout", User{TimeoutUntil: &past}, now, auth.StatusActive, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.u.StatusAt(tc.at); got != tc.status {
				t.Fatalf("StatusAt = %q, want %q", got, tc.status)
			}
			if got := tc.u.View(tc.at).Status; got != tc.status {
				t.Fatalf("View().Status = %q, want %q", got, tc.status)
			}
			reason, err := tc.u.loginBlocked(tc.at)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("login blocked: %v", err)
				}
				return
			}
			if e, ok := errs.As(err); !ok || e.Kind != errs.KindForbidden || e.Message != tc.msg || reason != tc.reason {
				t.Fatalf("loginBlocked = %q, %v; want 403 %q (%s)", reason, err, tc.msg, tc.reason)
			}
		})
	}
}

func TestViewHidesSecretsAndUsesUTC(t *testing.T) {
	loc := time.FixedZone("X", 3600)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, loc)
	u := User{ID: "u1", Email: "a@example.com", PasswordHash: "$argon2id$secret", IDPUID: "sub-1", Role: auth.RoleUser,
		AuthProvider: auth.ProviderEmail, QuotaLimit: 100, CreatedAt: at, UpdatedAt: at, LastLoginAt: &at}
	v := u.View(at)
	if v.CreatedAt.Location() != time.UTC || v.LastLoginAt.Location() != time.UTC || !v.CreatedAt.Equal(at) {
		t.Fatalf("times not UTC: %+v", v)
	}
	if v.ID != "u1" || v.Email != "a@example.com" || v.QuotaLimit != 100 || v.Status != auth.StatusActive {
		t.Fatalf("view = %+v", v)
	}
}
