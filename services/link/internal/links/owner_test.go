package links

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

func wantErr(t *testing.T, err error, kind errs.Kind, msg string) {
	t.Helper()
	if e, ok := errs.As(err); !ok || e.Kind != kind || e.Message != msg {
		t.Fatalf("got %v, want kind %d %q", err, kind, msg)
	}
}

func TestOwnerRules(t *testing.T) {
	s, st, c := newService()
	ctx := context.Background()
	st.links["mine"] = Link{ID: "id-mine", ShortCode: "mine", OwnerID: "u1", Status: link.StatusActive, ExpiresAt: now.Add(-time.Hour)}
	st.links["off"] = Link{ShortCode: "off", OwnerID: "u1", Status: link.StatusDisabled, ExpiresAt: now.Add(time.Hour)}
	st.links["theirs"] = Link{ShortCode: "theirs", OwnerID: "u2", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour)}
	other := identity.Caller{UserID: "u2", Role: "user"}

	l, err := s.Renew(ctx, user, "mine", link.RenewRequest{ExpirationDays: ptr(7)})
	if err != nil || !l.ExpiresAt.Equal(now.AddDate(0, 0, 7)) || l.Expired || l.OwnerID != "" || !st.links["mine"].ExpiresAt.Equal(now.AddDate(0, 0, 7)) {
		t.Fatalf("renew: %+v %v", l, err)
	}
	if len(c.invalidated) != 1 || c.invalidated[0] != "mine" {
		t.Fatalf("renewal must drop every cached copy: %v", c.invalidated)
	}
	if l, err := s.Renew(ctx, user, "mine", link.RenewRequest{}); err != nil || !l.ExpiresAt.Equal(now.AddDate(0, 0, 30)) {
		t.Fatalf("default renewal: %+v %v", l, err)
	}
	_, err = s.Renew(ctx, user, "mine", link.RenewRequest{ExpirationDays: ptr(0)})
	wantErr(t, err, errs.KindInvalid, "expiration_days must be between 1 and 365")
	_, err = s.Renew(ctx, user, "off", link.RenewRequest{})
	wantErr(t, err, errs.KindForbidden, "short link has been disabled")
	for _, caller := range []identity.Caller{other, anon} {
		_, err = s.Renew(ctx, caller, "mine", link.RenewRequest{})
		wantErr(t, err, errs.KindNotFound, link.MsgNotFound)
		wantErr(t, s.Delete(ctx, caller, "mine"), errs.KindNotFound, link.MsgNotFound)
	}

	if err := s.Delete(ctx, user, "mine"); err != nil || st.links["mine"].DeletedAt == nil {
		t.Fatalf("delete: %v", err)
	}
	wantErr(t, s.Delete(ctx, user, "mine"), errs.KindNotFound, link.MsgNotFound)

	get := func(q map[string]string) func(string) string { return func(k string) string { return q[k] } }
	list, err := s.Mine(ctx, user, get(nil))
	if err != nil || list.Total != 1 || len(list.Links) != 1 || list.Links[0].ShortCode != "off" || list.Page != 1 || list.PageSize != 20 {
		t.Fatalf("mine: %+v %v", list, err)
	}
	_, err = s.Mine(ctx, user, get(map[string]string{"status": "deleted"}))
	wantErr(t, err, errs.KindInvalid, "status must be active, expired, disabled or all")
	_, err = s.Mine(ctx, user, get(map[string]string{"q": "\xff"}))
	wantErr(t, err, errs.KindInvalid, "q must be valid text of at most 2048 characters")
	_, err = s.Mine(ctx, anon, get(nil))
	wantErr(t, err, errs.KindUnauthenticated, "authentication required")
}

func TestOwnedAndAutoRenew(t *testing.T) {
	s, st, c := newService()
	ctx := context.Background()
	st.links["mine"] = Link{ID: "id-mine", ShortCode: "mine", OwnerID: "u1", Status: link.StatusActive, ExpiresAt: now.Add(-time.Hour)}
	if l, err := s.Owned(ctx, user, "mine"); err != nil || l.ShortCode != "mine" || !l.Expired || l.OwnerID != "" {
		t.Fatalf("owned: %+v %v", l, err)
	}
	_, err := s.Owned(ctx, identity.Caller{UserID: "u2", Role: "user"}, "mine")
	wantErr(t, err, errs.KindNotFound, link.MsgNotFound)

	_, err = s.SetAutoRenew(ctx, user, "mine", "", true)
	wantErr(t, err, errs.KindForbidden, "moderator role required")
	mod := identity.Caller{UserID: "m1", Role: identity.RoleModerator}
	for range 2 { // idempotent
		l, err := s.SetAutoRenew(ctx, mod, "mine", "id-mine", true)
		if err != nil || !l.AutoRenew || l.Expired || !st.links["mine"].AutoRenew || l.OwnerID != "u1" {
			t.Fatalf("auto-renew: %+v %v", l, err)
		}
	}
	if len(c.invalidated) != 2 {
		t.Fatalf("every switch drops the cached copies: %v", c.invalidated)
	}
	_, err = s.SetAutoRenew(ctx, mod, "nope", "", true)
	wantErr(t, err, errs.KindNotFound, link.MsgNotFound)
	// Bound to a link id: the code's link is gone, or the code names another link now.
	_, err = s.SetAutoRenew(ctx, mod, "nope", "id-nope", true)
	wantErr(t, err, errs.KindConflict, link.MsgLinkGone)
	st.links["mine"] = Link{ID: "id-new", ShortCode: "mine", OwnerID: "u2", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour)}
	_, err = s.SetAutoRenew(ctx, mod, "mine", "id-mine", true)
	wantErr(t, err, errs.KindConflict, link.MsgLinkGone)
	if st.links["mine"].AutoRenew {
		t.Fatal("the change reached the link that took the code over")
	}
}

// Click counts come from the analytics service, which owns every click; the analytics of a
// link answer for its owner only, through the one ownership check.
func TestClicksAndAnalytics(t *testing.T) {
	s, st, _ := newService()
	clicks := &fakeClicks{links: map[string]int64{"id-a": 7, "id-b": 2}, owners: map[string]int64{"u1": 11}}
	s.clicks = clicks
	ctx := context.Background()
	st.links["a"] = Link{ID: "id-a", ShortCode: "a", OwnerID: "u1", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	st.links["b"] = Link{ID: "id-b", ShortCode: "b", OwnerID: "u1", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour), CreatedAt: now.Add(-time.Minute)}
	st.links["gone"] = Link{ID: "id-g", ShortCode: "gone", OwnerID: "u1", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour), DeletedAt: &now}
	st.links["theirs"] = Link{ID: "id-t", ShortCode: "theirs", OwnerID: "u2", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour)}

	list, err := s.Mine(ctx, user, func(string) string { return "" })
	if err != nil || len(list.Links) != 2 || list.Links[0].ClickCount != 7 || list.Links[1].ClickCount != 2 {
		t.Fatalf("mine: %+v %v", list, err)
	}
	a, err := s.Analytics(ctx, user, "a", "")
	if err != nil || a.TotalClicks != 7 || a.ShortCode != "a" || a.From != "30" {
		t.Fatalf("analytics: %+v %v", a, err)
	}
	if a, err := s.Analytics(ctx, user, "a", "365"); err != nil || a.From != "365" {
		t.Fatalf("365 days: %+v %v", a, err)
	}
	for _, days := range []string{"0", "366", "-1", "7.5", "x", "1e2"} {
		_, err := s.Analytics(ctx, user, "a", days)
		wantErr(t, err, errs.KindInvalid, "days must be an integer between 1 and 365")
	}
	other := identity.Caller{UserID: "u2", Role: "user"}
	for _, tc := range []struct {
		caller identity.Caller
		code   string
	}{{other, "a"}, {anon, "a"}, {user, "gone"}, {user, "theirs"}, {user, "nosuch"}} {
		_, err := s.Analytics(ctx, tc.caller, tc.code, "")
		wantErr(t, err, errs.KindNotFound, link.MsgNotFound)
	}
	clicks.fail = errs.Unavailable("analytics service unavailable", errors.New("connection refused"))
	_, err = s.Analytics(ctx, user, "a", "")
	wantErr(t, err, errs.KindUnavailable, "analytics service unavailable")
	_, err = s.Mine(ctx, user, func(string) string { return "" })
	wantErr(t, err, errs.KindUnavailable, "analytics service unavailable")
}
