package requests

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

type fakeStore struct {
	reqs      map[string]Request
	reports   map[string]Report
	pending   map[Queue]int64
	audit     map[string]AuditEntry
	auditErr  error
	finishErr error
}

func (s *fakeStore) InsertRequest(_ context.Context, r Request) error {
	for _, o := range s.reqs {
		if o.ShortCode == r.ShortCode && o.Status == StatusPending {
			return ErrPending
		}
	}
	s.reqs[r.ID] = r
	return nil
}

func (s *fakeStore) Request(_ context.Context, id string) (Request, error) {
	r, ok := s.reqs[id]
	if !ok {
		return Request{}, ErrNotFound
	}
	return r, nil
}

func (s *fakeStore) Requests(context.Context, string, int64, int64) ([]Request, int64, error) {
	return nil, 0, nil
}

func (s *fakeStore) Claim(_ context.Context, q Queue, id, action, _ string, _, _ time.Time) (bool, string, error) {
	if q == QueueReports {
		r := s.reports[id]
		if r.Status != StatusPending || (r.ClaimAction != "" && r.ClaimAction != action) {
			return false, "", nil
		}
		r.ClaimAction = action
		s.reports[id] = r
		return true, "", nil
	}
	r := s.reqs[id]
	if r.Status != StatusPending || (r.ClaimAction != "" && r.ClaimAction != action) {
		return false, "", nil
	}
	r.ClaimAction = action
	s.reqs[id] = r
	return true, "", nil
}

func (s *fakeStore) Unclaim(_ context.Context, q Queue, id, action string) error {
	if r := s.reqs[id]; q == QueuePermanent && r.ClaimAction == action {
		r.ClaimAction = ""
		s.reqs[id] = r
	}
	return nil
}

func (s *fakeStore) Finish(_ context.Context, q Queue, id, action, status, by, note string, at time.Time) (bool, error) {
	if s.finishErr != nil {
		return false, s.finishErr
	}
	if q == QueueReports {
		r := s.reports[id]
		if r.Status != StatusPending || r.ClaimAction != action {
			return false, nil
		}
		r.Status, r.ResolvedBy, r.ResolutionNote, r.ResolvedAt, r.ClaimAction = status, by, note, &at, ""
		s.reports[id] = r
		return true, nil
	}
	r := s.reqs[id]
	if r.Status != StatusPending || r.ClaimAction != action {
		return false, nil
	}
	r.Status, r.ResolvedBy, r.ResolutionNote, r.ResolvedAt, r.ClaimAction = status, by, note, &at, ""
	s.reqs[id] = r
	return true, nil
}

func (s *fakeStore) InsertAudit(_ context.Context, e AuditEntry) error {
	if s.auditErr != nil {
		return s.auditErr
	}
	s.audit[e.ID] = e
	return nil
}

type fakeLinks struct {
	// ids is the id of the link a code names, when not "id-" + code (the code reused).
	ids       map[string]string
	disabled  map[string]int
	owned     map[string]bool // code → auto_renew, for the caller's own links
	autoRenew map[string]bool
}

func (l *fakeLinks) Owned(_ context.Context, code string) (link.Link, error) {
	on, ok := l.owned[code]
	if !ok {
		return link.Link{}, errs.NotFound(link.MsgNotFound)
	}
	return link.Link{ID: l.id(code), ShortCode: code, AutoRenew: on}, nil
}

func (l *fakeLinks) id(code string) string {
	if id, ok := l.ids[code]; ok {
		return id
	}
	return "id-" + code
}

func (l *fakeLinks) SetAutoRenew(_ context.Context, code, linkID string, on bool) (link.Link, error) {
	if linkID != "" && linkID != l.id(code) {
		return link.Link{}, errs.E(errs.KindConflict, link.MsgLinkGone)
	}
	l.autoRenew[code] = on
	return link.Link{ShortCode: code, AutoRenew: on}, nil
}

var (
	owner = identity.Caller{UserID: "u1", Role: identity.RoleUser, IPHash: "ip-u1"}
	mod   = identity.Caller{UserID: "m1", Role: identity.RoleModerator, IPHash: "ip-m1", UserAgent: "ua"}
)

func newService() (*Service, *fakeStore, *fakeLinks) {
	st := &fakeStore{reqs: map[string]Request{}, reports: map[string]Report{}, audit: map[string]AuditEntry{}}
	l := &fakeLinks{owned: map[string]bool{"mine": false, "forever": true}, autoRenew: map[string]bool{}, ids: map[string]string{}}
	n := 0
	return NewService(st, Peers{Links: l, Quota: &fakeQuota{limit: 2}}, func() string { n++; return "r" + string(rune('0'+n)) }), st, l
}

func wantErr(t *testing.T, err error, kind errs.Kind, msg string) {
	t.Helper()
	if e, ok := errs.As(err); !ok || e.Kind != kind || e.Message != msg {
		t.Fatalf("got %v, want kind %d %q", err, kind, msg)
	}
}

func ptr[T any](v T) *T { return &v }

func TestFile(t *testing.T) {
	s, _, _ := newService()
	ctx := context.Background()
	r, err := s.File(ctx, owner, "mine", moderation.PermanentRequestBody{Reason: ptr("docs link")})
	if err != nil || r.Status != StatusPending || r.ShortCode != "mine" || r.Reason != "docs link" || r.ID == "" {
		t.Fatalf("file: %+v %v", r, err)
	}
	_, err = s.File(ctx, owner, "mine", moderation.PermanentRequestBody{})
	wantErr(t, err, errs.KindConflict, "a permanent request for this link is pending")
	_, err = s.File(ctx, owner, "forever", moderation.PermanentRequestBody{})
	wantErr(t, err, errs.KindConflict, "link already auto-renews")
	_, err = s.File(ctx, owner, "theirs", moderation.PermanentRequestBody{})
	wantErr(t, err, errs.KindNotFound, link.MsgNotFound)
	long := make([]rune, MaxTextLength+1)
	for i := range long {
		long[i] = 'x'
	}
	_, err = s.File(ctx, owner, "mine", moderation.PermanentRequestBody{Reason: ptr(string(long))})
	wantErr(t, err, errs.KindInvalid, "reason must be valid text of at most 2000 characters")
}

func TestResolve(t *testing.T) {
	s, st, l := newService()
	ctx := context.Background()
	r, _ := s.File(ctx, owner, "mine", moderation.PermanentRequestBody{})

	_, err := s.Resolve(ctx, owner, r.ID, moderation.ResolveRequest{Action: "approve"})
	wantErr(t, err, errs.KindForbidden, "moderator role required")
	_, err = s.Resolve(ctx, mod, r.ID, moderation.ResolveRequest{Action: "maybe"})
	wantErr(t, err, errs.KindInvalid, "action must be approve or reject")
	_, err = s.Resolve(ctx, mod, "nope", moderation.ResolveRequest{Action: "approve"})
	wantErr(t, err, errs.KindNotFound, "permanent request not found")

	// A failed audit write undoes the approval and leaves the request pending.
	st.auditErr = errors.New("audit store down")
	if _, err := s.Resolve(ctx, mod, r.ID, moderation.ResolveRequest{Action: "approve"}); err == nil {
		t.Fatal("an approval without its audit entry succeeded")
	}
	if l.autoRenew["mine"] || st.reqs[r.ID].Status != StatusPending {
		t.Fatalf("after a failed audit write: auto_renew %v, status %s", l.autoRenew["mine"], st.reqs[r.ID].Status)
	}
	st.auditErr = nil
	// A crash before the last step: the request stays pending and claimed for approval, so
	// a rejection is refused and the same action finishes it.
	st.finishErr = errors.New("store down")
	if _, err := s.Resolve(ctx, mod, r.ID, moderation.ResolveRequest{Action: "approve"}); err == nil {
		t.Fatal("a failed last step succeeded")
	}
	st.finishErr = nil
	_, err = s.Resolve(ctx, mod, r.ID, moderation.ResolveRequest{Action: "reject"})
	wantErr(t, err, errs.KindConflict, "permanent request is being resolved")
	got, err := s.Resolve(ctx, mod, r.ID, moderation.ResolveRequest{Action: "approve", Note: ptr("ok")})
	if err != nil || got.Status != StatusApproved || got.ResolvedBy != "m1" || got.ResolutionNote != "ok" || !l.autoRenew["mine"] {
		t.Fatalf("approve: %+v %v (auto_renew %v)", got, err, l.autoRenew["mine"])
	}
	e := st.audit["permanent_request:"+r.ID+":approve"]
	if e.ActorID != "m1" || e.Action != "permanent_request.approve" || e.TargetType != "permanent_request" || e.TargetID != r.ID ||
		e.IPHash != "ip-m1" || e.UserAgent != "ua" || e.Detail["short_code"] != "mine" {
		t.Fatalf("audit entry %+v", e)
	}
	_, err = s.Resolve(ctx, mod, r.ID, moderation.ResolveRequest{Action: "approve"})
	wantErr(t, err, errs.KindConflict, "permanent request already resolved")

	// A rejection leaves the link as it is.
	l.owned["other"] = false
	r2, _ := s.File(ctx, owner, "other", moderation.PermanentRequestBody{})
	if got, err := s.Resolve(ctx, mod, r2.ID, moderation.ResolveRequest{Action: "reject"}); err != nil || got.Status != StatusRejected || l.autoRenew["other"] {
		t.Fatalf("reject: %+v %v", got, err)
	}

	// The approval acts on the request's link: once it is purged and its code names another
	// link, the approval is a 409, that other link stays as it is, and the request can still
	// be rejected.
	l.owned["reused"] = false
	r3, _ := s.File(ctx, owner, "reused", moderation.PermanentRequestBody{})
	if st.reqs[r3.ID].LinkID != "id-reused" {
		t.Fatalf("request filed without its link id: %+v", st.reqs[r3.ID])
	}
	l.ids["reused"] = "id-someone-else"
	_, err = s.Resolve(ctx, mod, r3.ID, moderation.ResolveRequest{Action: "approve"})
	wantErr(t, err, errs.KindConflict, link.MsgLinkGone)
	if l.autoRenew["reused"] || st.reqs[r3.ID].Status != StatusPending {
		t.Fatalf("after approving a gone link: auto_renew %v, status %s", l.autoRenew["reused"], st.reqs[r3.ID].Status)
	}
	// The refused approval left no hold behind: a rejection goes through at once.
	if got, err := s.Resolve(ctx, mod, r3.ID, moderation.ResolveRequest{Action: "reject"}); err != nil || got.Status != StatusRejected {
		t.Fatalf("reject a gone link's request: %+v %v", got, err)
	}
}

func (s *fakeStore) Forget(_ context.Context, userID string) error {
	for id, r := range s.reqs {
		if r.OwnerID == userID {
			delete(s.reqs, id)
		}
	}
	return nil
}
