package links

import (
	"context"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

func (s *fakeStore) UpdateIf(_ context.Context, code, from string, ch Change) (Link, bool, error) {
	l, ok := s.links[code]
	if s.failErr != nil || !ok || l.DeletedAt != nil || l.Status != from {
		return Link{}, false, s.failErr
	}
	ch.Apply(&l)
	l.Rev++
	s.links[code] = l
	return l, true, nil
}

func (s *fakeStore) Undo(_ context.Context, id string, rev int64, ch Change) (bool, error) {
	for code, l := range s.links {
		if l.ID == id && l.Rev == rev {
			ch.Apply(&l)
			l.Rev++
			s.links[code] = l
			return true, nil
		}
	}
	return false, s.failErr
}

func (s *fakeStore) DisableOwner(_ context.Context, ownerID string, reason *string, _ time.Time) ([]Link, error) {
	var disabled []Link
	for code, l := range s.links {
		if l.OwnerID == ownerID && l.DeletedAt == nil && l.Status == link.StatusActive {
			l.Status, l.DisabledReason = link.StatusDisabled, reason
			s.links[code] = l
			disabled = append(disabled, l)
		}
	}
	return disabled, s.failErr
}

func (s *fakeStore) MarkPurge(_ context.Context, id string, m PurgeMark) (PurgeMark, error) {
	for code, l := range s.links {
		if l.ID == id {
			if l.Purge == nil {
				l.Purge = &m
			}
			if l.DeletedAt == nil {
				l.DeletedAt = &l.Purge.At
			}
			s.links[code] = l
			return *l.Purge, nil
		}
	}
	return PurgeMark{}, ErrNotFound
}

func (s *fakeStore) PurgesDue(_ context.Context, before time.Time, _ int64) ([]Link, error) {
	var out []Link
	for _, l := range s.links {
		if l.Purge != nil && l.Purge.At.Before(before) {
			out = append(out, l)
		}
	}
	return out, nil
}

func (s *fakeStore) DeleteByID(_ context.Context, id string) error {
	for code, l := range s.links {
		if l.ID == id && l.Purge != nil {
			delete(s.links, code)
		}
	}
	return nil
}

func (s *fakeStore) CountStates(context.Context, time.Time) (link.LinkCounts, error) {
	return link.LinkCounts{}, nil
}

func (f *fakeClicks) Purge(_ context.Context, linkID string) error {
	if f.fail != nil {
		return f.fail
	}
	delete(f.links, linkID)
	return nil
}

// fakeModeration keeps audit records by id (a repeat writes nothing) and deleted reports.
type fakeModeration struct {
	audit          map[string]moderation.AuditRecord
	reportsDeleted []string
	auditErr       error
	// during runs while an audit call is in flight.
	during func()
}

func (m *fakeModeration) Audit(_ context.Context, rec moderation.AuditRecord) error {
	if m.during != nil {
		m.during()
	}
	if m.auditErr != nil {
		return m.auditErr
	}
	m.audit[rec.ID] = rec
	return nil
}

func (m *fakeModeration) DeleteReports(_ context.Context, linkID string) error {
	m.reportsDeleted = append(m.reportsDeleted, linkID)
	return nil
}

var moderator = identity.Caller{UserID: "m1", Role: identity.RoleModerator, IPHash: "ip-m1", UserAgent: "ua"}

func newAdminService(t *testing.T) (*Service, *fakeStore, *fakeCache, *fakeModeration, *fakeClicks) {
	t.Helper()
	s, st, c := newService()
	keys := testenv.Keys(t, config.Link)
	mod := &fakeModeration{audit: map[string]moderation.AuditRecord{}}
	clicks := &fakeClicks{links: map[string]int64{"id-a": 7}}
	s.mod, s.keys, s.clicks = mod, keys, clicks
	st.links["a"] = Link{ID: "id-a", ShortCode: "a", OwnerID: "u1", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour)}
	st.links["b"] = Link{ID: "id-b", ShortCode: "b", OwnerID: "u1", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour)}
	st.links["c"] = Link{ID: "id-c", ShortCode: "c", OwnerID: "u2", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour)}
	return s, st, c, mod, clicks
}

func TestDisableEnableAudited(t *testing.T) {
	s, st, c, mod, _ := newAdminService(t)
	ctx := context.Background()
	if _, err := s.Disable(ctx, user, "a", link.DisableRequest{}); !errs.IsKind(err, errs.KindForbidden) {
		t.Fatalf("a user disabled a link: %v", err)
	}
	v, err := s.Disable(ctx, moderator, "a", link.DisableRequest{Reason: ptr("phishing")})
	if err != nil || v.Status != link.StatusDisabled || v.OwnerID != "u1" {
		t.Fatalf("disable: %+v %v", v, err)
	}
	if st.links["a"].DisabledReason == nil || *st.links["a"].DisabledReason != "phishing" || len(mod.audit) != 1 {
		t.Fatalf("stored %+v, audit %v", st.links["a"], mod.audit)
	}
	if c.invalidated[len(c.invalidated)-1] != "a" {
		t.Fatalf("caches not told: %v", c.invalidated)
	}
	// Again: nothing changes, nothing is audited.
	if _, err := s.Disable(ctx, moderator, "a", link.DisableRequest{}); err != nil || len(mod.audit) != 1 {
		t.Fatalf("second disable: %v, %d entries", err, len(mod.audit))
	}
	// An enable whose entry cannot be written does not stand, and the reason comes back.
	mod.auditErr = errs.Unavailable("moderation service unavailable", nil)
	if _, err := s.Enable(ctx, moderator, "a"); !errs.IsKind(err, errs.KindUnavailable) {
		t.Fatalf("unaudited enable: %v", err)
	}
	if l := st.links["a"]; l.Status != link.StatusDisabled || l.DisabledReason == nil || *l.DisabledReason != "phishing" {
		t.Fatalf("after the undo: %+v", l)
	}
	mod.auditErr = nil
	if v, err := s.Enable(ctx, moderator, "a"); err != nil || v.Status != link.StatusActive || st.links["a"].DisabledReason != nil {
		t.Fatalf("enable: %+v %v %+v", v, err, st.links["a"])
	}
	for _, e := range mod.audit {
		if e.TargetType != moderation.TargetLink || e.TargetID != "id-a" {
			t.Fatalf("entry %+v", e)
		}
	}
	if _, err := s.Disable(ctx, moderator, "zz", link.DisableRequest{}); !errs.IsKind(err, errs.KindNotFound) {
		t.Fatalf("unknown code: %v", err)
	}
	long := string(make([]byte, MaxReasonLength+1))
	if _, err := s.Disable(ctx, moderator, "b", link.DisableRequest{Reason: &long}); !errs.IsKind(err, errs.KindInvalid) {
		t.Fatalf("long reason: %v", err)
	}
}

func TestDisableOwner(t *testing.T) {
	s, st, c, _, _ := newAdminService(t)
	n, err := s.DisableOwner(context.Background(), moderator, "u1", link.DisableRequest{Reason: ptr("banned")})
	if err != nil || n != 2 || st.links["c"].Status != link.StatusActive {
		t.Fatalf("disabled %d (%v); u2's link %s", n, err, st.links["c"].Status)
	}
	if len(c.invalidated) != 2 {
		t.Fatalf("caches told of %v", c.invalidated)
	}
	if n, _ := s.DisableOwner(context.Background(), moderator, "u1", link.DisableRequest{}); n != 0 {
		t.Fatalf("a repeat disabled %d", n)
	}
}

func TestPurgeHealsOnRetryAndSweep(t *testing.T) {
	s, st, _, mod, clicks := newAdminService(t)
	ctx := context.Background()
	if err := s.Purge(ctx, user, "a"); !errs.IsKind(err, errs.KindForbidden) {
		t.Fatalf("a user purged: %v", err)
	}
	// The analytics step fails: the link is marked, answers 404, and stays stored.
	clicks.fail = errs.Unavailable("analytics service unavailable", nil)
	if err := s.Purge(ctx, moderator, "a"); !errs.IsKind(err, errs.KindUnavailable) {
		t.Fatalf("purge with analytics down: %v", err)
	}
	if _, err := s.Info(ctx, "a"); !errs.IsKind(err, errs.KindNotFound) {
		t.Fatalf("a link being deleted answers %v", err)
	}
	if _, ok := st.links["a"]; !ok {
		t.Fatal("the link went before its clicks")
	}
	// Another moderator retries: it finishes, audited once, in the first one's name.
	clicks.fail = nil
	other := identity.Caller{UserID: "m2", Role: identity.RoleModerator}
	if err := s.Purge(ctx, other, "a"); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if _, ok := st.links["a"]; ok || clicks.links["id-a"] != 0 || len(mod.reportsDeleted) != 1 || len(mod.audit) != 1 {
		t.Fatalf("after the retry: stored %v clicks %v reports %v audit %v", ok, clicks.links, mod.reportsDeleted, mod.audit)
	}
	if e := mod.audit["link.delete:id-a"]; e.Action != moderation.AuditLinkDelete || e.Detail["short_code"] != "a" ||
		e.Actor == nil || *e.Actor != (moderation.AuditActor{ID: "m1", IPHash: "ip-m1", UserAgent: "ua"}) {
		t.Fatalf("entry %+v", e)
	}
	if err := s.Purge(ctx, moderator, "a"); !errs.IsKind(err, errs.KindNotFound) {
		t.Fatalf("purging twice: %v", err)
	}
	// A deletion left half done is finished by the sweeper once its lease has passed.
	mod.auditErr = errs.Unavailable("moderation service unavailable", nil)
	if err := s.Purge(ctx, moderator, "b"); err == nil {
		t.Fatal("a purge without its audit entry succeeded")
	}
	mod.auditErr = nil
	if n, err := s.FinishPurges(ctx, now.Add(PurgeLease/2)); n != 0 || err != nil {
		t.Fatalf("swept a fresh deletion: %d %v", n, err)
	}
	if n, err := s.FinishPurges(ctx, now.Add(2*PurgeLease)); n != 1 || err != nil {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, ok := st.links["b"]; ok || mod.audit["link.delete:id-b"].ID == "" || mod.audit["link.delete:id-b"].Actor.ID != "m1" {
		t.Fatalf("after the sweep: stored %v, audit %v", ok, mod.audit)
	}
}

// The undo of a switch whose audit entry failed leaves alone a link that changed again
// meanwhile: the later change was audited by whoever made it.
func TestUndoLeavesALaterChange(t *testing.T) {
	s, st, _, mod, _ := newAdminService(t)
	ctx := context.Background()
	mod.auditErr = errs.Unavailable("moderation service unavailable", nil)
	mod.during = func() {
		l := st.links["a"]
		l.Status, l.Rev = link.StatusActive, l.Rev+1 // enabled again by another moderator
		l.DisabledReason = nil
		st.links["a"] = l
		mod.during = nil
	}
	if _, err := s.Disable(ctx, moderator, "a", link.DisableRequest{Reason: ptr("spam")}); !errs.IsKind(err, errs.KindUnavailable) {
		t.Fatalf("unaudited disable: %v", err)
	}
	mod.auditErr = nil
	if _, err := s.Disable(ctx, moderator, "a", link.DisableRequest{}); err != nil {
		t.Fatal(err)
	}
	mod.auditErr = errs.Unavailable("moderation service unavailable", nil)
	mod.during = func() {
		l := st.links["a"]
		l.Rev++ // touched again by another write
		st.links["a"] = l
		mod.during = nil
	}
	if _, err := s.Enable(ctx, moderator, "a"); err == nil {
		t.Fatal("an unaudited enable succeeded")
	}
	if st.links["a"].Status != link.StatusActive {
		t.Fatalf("the undo overwrote a later write: %s", st.links["a"].Status)
	}
}
