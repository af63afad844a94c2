package requests

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

func (s *fakeStore) Audit(context.Context, string, string, int64, int64) ([]AuditEntry, int64, error) {
	return nil, 0, nil
}

func (s *fakeStore) InsertReport(_ context.Context, r Report) error {
	if s.finishErr != nil {
		return s.finishErr
	}
	s.reports[r.ID] = r
	return nil
}

func (s *fakeStore) Report(_ context.Context, id string) (Report, error) {
	r, ok := s.reports[id]
	if !ok {
		return Report{}, ErrNotFound
	}
	return r, nil
}

func (s *fakeStore) Reports(context.Context, string, int64, int64) ([]Report, int64, error) {
	return nil, 0, nil
}

func (s *fakeStore) DeleteReports(_ context.Context, linkID string) error {
	for id, r := range s.reports {
		if r.LinkID == linkID {
			delete(s.reports, id)
		}
	}
	return nil
}

func (s *fakeStore) CountPending(_ context.Context, q Queue) (int64, error) { return s.pending[q], nil }

func (l *fakeLinks) Resolve(_ context.Context, code string) (link.Resolved, error) {
	if _, ok := l.owned[code]; !ok {
		return link.Resolved{}, errs.NotFound(link.MsgNotFound)
	}
	return link.Resolved{ID: "id-" + code, ShortCode: code}, nil
}

func (l *fakeLinks) Disable(_ context.Context, code string, _ link.DisableRequest) (link.Link, error) {
	if l.disabled == nil {
		l.disabled = map[string]int{}
	}
	l.disabled[code]++
	return link.Link{ShortCode: code, Status: link.StatusDisabled}, nil
}

func (l *fakeLinks) Counts(context.Context) (link.LinkCounts, error) {
	return link.LinkCounts{Total: 7, Active: 3, Expired: 1, Disabled: 2, Deleted: 1}, nil
}

// fakeQuota grants limit units per key; released units free room again.
type fakeQuota struct {
	limit    int
	taken    map[string]int
	released int
}

func (q *fakeQuota) Reserve(_ context.Context, req quota.ReserveRequest) (quota.Reservation, error) {
	if q.taken == nil {
		q.taken = map[string]int{}
	}
	if req.Scope != quota.ScopeReport || q.taken[req.Key] >= q.limit {
		return quota.Reservation{Allowed: false, RetryAfterSeconds: 60}, nil
	}
	q.taken[req.Key]++
	return quota.Reservation{Allowed: true, ID: "u"}, nil
}

func (q *fakeQuota) Release(_ context.Context, req quota.ReleaseRequest) error {
	q.taken[req.Key]--
	q.released++
	return nil
}

var reporter = identity.Caller{Role: identity.RoleAnonymous, IPHash: "ip-anon"}

func TestSubmitReport(t *testing.T) {
	s, st, _ := newService()
	ctx := context.Background()
	body := func(code, reason, details string) moderation.ReportBody {
		return moderation.ReportBody{ShortCode: &code, Reason: &reason, Details: &details}
	}
	wantErr(t, s.Submit(ctx, reporter, moderation.ReportBody{}), errs.KindInvalid, "short_code is required")
	wantErr(t, s.Submit(ctx, reporter, body("mine", "rude", "")), errs.KindInvalid, "reason must be one of spam, phishing, malware, illegal, other")
	wantErr(t, s.Submit(ctx, reporter, body("mine", "spam", strings.Repeat("é", 2001))), errs.KindInvalid, "details must be valid text of at most 2000 characters")
	wantErr(t, s.Submit(ctx, reporter, body("nope", "spam", "")), errs.KindNotFound, link.MsgNotFound)
	// A report that cannot be stored gives its unit back.
	st.finishErr = errors.New("store down")
	if err := s.Submit(ctx, reporter, body("mine", "spam", "")); err == nil {
		t.Fatal("a report that was not stored succeeded")
	}
	st.finishErr = nil
	for range 2 {
		if err := s.Submit(ctx, reporter, body("mine", "phishing", "fake bank")); err != nil {
			t.Fatal(err)
		}
	}
	err := s.Submit(ctx, reporter, body("mine", "spam", ""))
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindTooMany || e.RetryAfter != time.Minute {
		t.Fatalf("third report in the window: %v", err)
	}
	if len(st.reports) != 2 {
		t.Fatalf("%d reports stored", len(st.reports))
	}
	for _, r := range st.reports {
		if r.LinkID != "id-mine" || r.Status != StatusPending || r.Details != "fake bank" {
			t.Fatalf("stored %+v", r)
		}
	}
}

func TestResolveReport(t *testing.T) {
	s, st, l := newService()
	ctx := context.Background()
	st.reports["p1"] = Report{ID: "p1", LinkID: "id-mine", ShortCode: "mine", Reason: "spam", Status: StatusPending}
	_, err := s.ResolveReport(ctx, owner, "p1", moderation.ReportResolveRequest{Action: "resolve"})
	wantErr(t, err, errs.KindForbidden, "moderator role required")
	_, err = s.ResolveReport(ctx, mod, "p1", moderation.ReportResolveRequest{Action: "close"})
	wantErr(t, err, errs.KindInvalid, "action must be resolve or dismiss")
	_, err = s.ResolveReport(ctx, mod, "p1", moderation.ReportResolveRequest{Action: "dismiss", DisableLink: ptr(true)})
	wantErr(t, err, errs.KindInvalid, "disable_link applies only to resolve")
	_, err = s.ResolveReport(ctx, mod, "p9", moderation.ReportResolveRequest{Action: "resolve"})
	wantErr(t, err, errs.KindNotFound, "report not found")
	// The last step fails: the report stays pending and claimed for resolve, so a dismissal
	// is refused and resolving again finishes it without disabling twice or auditing twice.
	st.finishErr = errors.New("store down")
	if _, err := s.ResolveReport(ctx, mod, "p1", moderation.ReportResolveRequest{Action: "resolve", DisableLink: ptr(true), Note: ptr("phish")}); err == nil {
		t.Fatal("a failed last step succeeded")
	}
	st.finishErr = nil
	_, err = s.ResolveReport(ctx, mod, "p1", moderation.ReportResolveRequest{Action: "dismiss"})
	wantErr(t, err, errs.KindConflict, "report is being resolved")
	r, err := s.ResolveReport(ctx, mod, "p1", moderation.ReportResolveRequest{Action: "resolve", DisableLink: ptr(true), Note: ptr("phish")})
	if err != nil || r.Status != StatusResolved || *r.ResolvedBy != "m1" || *r.ResolutionNote != "phish" || r.ResolvedAt == nil {
		t.Fatalf("resolve: %+v %v", r, err)
	}
	if l.disabled["mine"] != 2 || len(st.audit) != 1 {
		t.Fatalf("link disabled %d times (idempotent), %d audit entries", l.disabled["mine"], len(st.audit))
	}
	if e := st.audit["report:p1:resolve"]; e.Action != moderation.AuditReportResolve || e.ActorID != "m1" || e.IPHash != "ip-m1" || e.Detail["disable_link"] != true {
		t.Fatalf("audit entry %+v", e)
	}
	_, err = s.ResolveReport(ctx, mod, "p1", moderation.ReportResolveRequest{Action: "resolve"})
	wantErr(t, err, errs.KindConflict, "report already resolved")
}

func TestRecordAudit(t *testing.T) {
	s, st, _ := newService()
	ctx := context.Background()
	rec := moderation.AuditRecord{ID: "a1", Action: moderation.AuditUserBan, TargetType: moderation.TargetUser, TargetID: "u9",
		Detail: map[string]any{"reason": "spam"}}
	wantErr(t, s.Record(ctx, owner, rec), errs.KindForbidden, "moderator role required")
	bad := rec
	bad.Action = "permanent_request.approve" // the service's own actions are not recorded from outside
	wantErr(t, s.Record(ctx, mod, bad), errs.KindInvalid, "action is not an audited action")
	bad = rec
	bad.Detail = map[string]any{"x": strings.Repeat("x", MaxAuditDetail)}
	wantErr(t, s.Record(ctx, mod, bad), errs.KindInvalid, "detail must be an object of at most 32768 bytes")
	if err := s.Record(ctx, mod, rec); err != nil {
		t.Fatal(err)
	}
	if e := st.audit["a1"]; e.ActorID != "m1" || e.IPHash != "ip-m1" || e.UserAgent != "ua" || e.TargetID != "u9" {
		t.Fatalf("entry %+v: the actor comes from the token", e)
	}
	// A moderator's record cannot name another actor.
	named := rec
	named.ID, named.Actor = "a2", &moderation.AuditActor{ID: "someone-else"}
	if err := s.Record(ctx, mod, named); err != nil || st.audit["a2"].ActorID != "m1" {
		t.Fatalf("a moderator named the actor: %v %+v", err, st.audit["a2"])
	}
	// The link service acting as itself names the moderator who started the deletion it
	// finishes; it must name one, and no other service may.
	linkSvc := identity.Caller{Role: identity.RoleService, Service: "link"}
	named.Actor = &moderation.AuditActor{ID: "m7", IPHash: "ip-m7", UserAgent: "ua7"}
	// Not a record of a link deletion, or not under the id a deletion uses: refused.
	wantErr(t, s.Record(ctx, linkSvc, named), errs.KindForbidden, "moderator role required")
	named.ID, named.Action, named.TargetType, named.TargetID = "a3", moderation.AuditLinkDelete, moderation.TargetLink, "l9"
	wantErr(t, s.Record(ctx, linkSvc, named), errs.KindForbidden, "moderator role required")
	named.ID = "link.delete:l9"
	if err := s.Record(ctx, linkSvc, named); err != nil {
		t.Fatal(err)
	}
	if e := st.audit["link.delete:l9"]; e.ActorID != "m7" || e.IPHash != "ip-m7" || e.UserAgent != "ua7" {
		t.Fatalf("entry %+v: the link service names the actor", e)
	}
	named.Actor = nil
	wantErr(t, s.Record(ctx, linkSvc, named), errs.KindInvalid, "actor must name who took the action")
	named.Actor = &moderation.AuditActor{ID: "m7"}
	wantErr(t, s.Record(ctx, identity.Caller{Role: identity.RoleService, Service: "auth"}, named), errs.KindForbidden, "moderator role required")
	wantErr(t, s.DeleteReports(ctx, identity.Caller{Role: identity.RoleService, Service: "quota"}, "l1"), errs.KindForbidden, "moderator role required")
	if err := s.DeleteReports(ctx, linkSvc, "l1"); err != nil {
		t.Fatalf("the link service finishing a deletion: %v", err)
	}
	_, err := s.AuditLog(ctx, mod, func(string) string { return "" })
	wantErr(t, err, errs.KindForbidden, "super admin role required")
}

type fakeUsers struct{ err error }

func (f fakeUsers) UserCounts(context.Context) (auth.UserCounts, error) {
	return auth.UserCounts{Total: 4, Active: 2, Suspended: 1, Banned: 1}, f.err
}

type fakeClicks struct{}

func (fakeClicks) Totals(context.Context) (analytics.Totals, error) {
	return analytics.Totals{Total: 9, Last24h: 3}, nil
}

func TestOverview(t *testing.T) {
	s, st, _ := newService()
	s.users, s.clicks = fakeUsers{}, fakeClicks{}
	st.pending = map[Queue]int64{QueueReports: 5, QueuePermanent: 6}
	ctx := context.Background()
	_, err := s.Overview(ctx, owner)
	wantErr(t, err, errs.KindForbidden, "moderator role required")
	o, err := s.Overview(ctx, mod)
	if err != nil || o.Users.Total != 4 || o.Users.Banned != 1 || o.Clicks.Total != 9 || o.Clicks.Last24h != 3 ||
		o.Reports.Pending != 5 || o.PermanentRequests.Pending != 6 || o.Links.Total != 7 || o.Links.Disabled != 2 {
		t.Fatalf("overview %+v, %v", o, err)
	}
	s.users = fakeUsers{err: errs.Unavailable("auth service unavailable", errors.New("connection refused"))}
	_, err = s.Overview(ctx, mod)
	wantErr(t, err, errs.KindUnavailable, "auth service unavailable")
}
