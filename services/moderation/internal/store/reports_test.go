package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/moderation/internal/requests"
)

// Reports on the real wire server: filed, listed by status newest first, claimed and
// resolved once, counted while pending, and deleted with their link; the audit log filtered
// by actor and action, an entry written twice stored once.
func TestReportsAndAudit(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		link := "L1"
		if i == 2 {
			link = "L2"
		}
		r := requests.Report{ID: fmt.Sprintf("p%d", i), LinkID: link, ShortCode: "c" + link, Reason: "spam",
			Status: requests.StatusPending, CreatedAt: now.Add(time.Duration(i) * time.Minute)}
		if err := s.InsertReport(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	ok, _, err := s.Claim(ctx, requests.QueueReports, "p0", "dismiss", "m1", now, now.Add(-time.Minute))
	if err != nil || !ok {
		t.Fatalf("claim %v %v", ok, err)
	}
	if ok, _, _ := s.Claim(ctx, requests.QueueReports, "p0", "resolve", "m2", now, now.Add(-time.Minute)); ok {
		t.Fatal("a fresh claim for another action was taken over")
	}
	if ok, err := s.Finish(ctx, requests.QueueReports, "p0", "dismiss", requests.StatusDismissed, "m1", "dup", now); !ok || err != nil {
		t.Fatalf("finish %v %v", ok, err)
	}
	if ok, _ := s.Finish(ctx, requests.QueueReports, "p0", "dismiss", requests.StatusDismissed, "m1", "dup", now); ok {
		t.Fatal("finished twice")
	}
	pending, total, err := s.Reports(ctx, requests.StatusPending, 0, 10)
	if err != nil || total != 2 || pending[0].ID != "p2" || pending[1].ID != "p1" {
		t.Fatalf("pending %+v (%d) %v", pending, total, err)
	}
	if n, _ := s.CountPending(ctx, requests.QueueReports); n != 2 {
		t.Fatalf("pending count %d", n)
	}
	done, _ := s.Report(ctx, "p0")
	if done.Status != requests.StatusDismissed || done.ResolvedBy != "m1" || done.ResolutionNote != "dup" || done.ResolvedAt == nil {
		t.Fatalf("dismissed %+v", done)
	}
	if err := s.DeleteReports(ctx, "L1"); err != nil {
		t.Fatal(err)
	}
	if _, total, _ := s.Reports(ctx, "", 0, 10); total != 1 {
		t.Fatalf("%d reports left after deleting L1's", total)
	}

	for i, e := range []requests.AuditEntry{
		{ID: "a1", ActorID: "m1", Action: "user.ban", TargetType: "user", TargetID: "u1", CreatedAt: now},
		{ID: "a2", ActorID: "m2", Action: "user.ban", TargetType: "user", TargetID: "u2", CreatedAt: now.Add(time.Second)},
		{ID: "a3", ActorID: "m1", Action: "link.disable", TargetType: "link", TargetID: "L1", CreatedAt: now.Add(2 * time.Second),
			Detail: map[string]any{"short_code": "abc"}},
		{ID: "a3", ActorID: "m1", Action: "link.disable", TargetType: "link", TargetID: "L1", CreatedAt: now.Add(3 * time.Second)},
	} {
		if err := s.InsertAudit(ctx, e); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	all, total, err := s.Audit(ctx, "", "", 0, 10)
	if err != nil || total != 3 || all[0].ID != "a3" || all[0].Detail["short_code"] != "abc" || !all[0].CreatedAt.Equal(now.Add(2*time.Second)) {
		t.Fatalf("audit log %+v (%d) %v", all, total, err)
	}
	if got, total, _ := s.Audit(ctx, "m1", "user.ban", 0, 10); total != 1 || got[0].ID != "a1" {
		t.Fatalf("filtered %+v (%d)", got, total)
	}
}
