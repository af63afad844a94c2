package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/moderation/internal/requests"
)

// Ten concurrent requests for one link on the real wire server: exactly one is pending.
func TestOnePendingRequestPerLink(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	var wg sync.WaitGroup
	results := make([]error, 10)
	for i := range results {
		wg.Go(func() {
			results[i] = s.InsertRequest(ctx, requests.Request{ID: fmt.Sprintf("r%d", i), ShortCode: "abc1234", OwnerID: "u1",
				Status: requests.StatusPending, CreatedAt: now})
		})
	}
	wg.Wait()
	won, refused := 0, 0
	var winner string
	for i, err := range results {
		switch {
		case err == nil:
			won++
			winner = fmt.Sprintf("r%d", i)
		case errors.Is(err, requests.ErrPending):
			refused++
		default:
			t.Fatalf("insert: %v", err)
		}
	}
	if won != 1 || refused != 9 {
		t.Fatalf("%d pending and %d refused; want exactly 1 and 9", won, refused)
	}
	list, total, err := s.Requests(ctx, requests.StatusPending, 0, 20)
	if err != nil || total != 1 || list[0].ID != winner {
		t.Fatalf("pending list %+v (%d), %v", list, total, err)
	}

	// Holds: one action at a time, the same action again (a retry), a stale hold taken over
	// (saying which action it took over from), and ten concurrent resolvers: one wins.
	later := now.Add(time.Second)
	if ok, took, err := s.Claim(ctx, requests.QueuePermanent, winner, "approve", "m1", later, later.Add(-time.Minute)); err != nil || !ok || took != "" {
		t.Fatalf("first claim: %v %q %v", ok, took, err)
	}
	if ok, _, _ := s.Claim(ctx, requests.QueuePermanent, winner, "reject", "m2", later, later.Add(-time.Minute)); ok {
		t.Fatal("a fresh claim for another action was taken over")
	}
	if ok, _, _ := s.Claim(ctx, requests.QueuePermanent, winner, "approve", "m2", later, later.Add(-time.Minute)); !ok {
		t.Fatal("the same action could not resume the claim")
	}
	if ok, took, _ := s.Claim(ctx, requests.QueuePermanent, winner, "reject", "m2", later.Add(2*time.Minute), later.Add(time.Minute)); !ok || took != "approve" {
		t.Fatalf("a stale claim was not taken over: %v %q", ok, took)
	}
	var held atomic.Int32
	var racers sync.WaitGroup
	for i := range 10 {
		action := []string{"resolve", "dismiss"}[i%2]
		racers.Go(func() {
			if ok, _, err := s.Claim(ctx, requests.QueueReports, "race", action, "m", later, later.Add(-time.Minute)); err == nil && ok {
				if action == "resolve" {
					held.Add(1)
				} else {
					held.Add(100)
				}
			}
		})
	}
	racers.Wait()
	if n := held.Load(); n != 5 && n != 500 {
		t.Fatalf("concurrent holds of two actions: %d (want all five of one action)", n)
	}
	if ok, err := s.Finish(ctx, requests.QueuePermanent, winner, "reject", requests.StatusRejected, "m2", "no", later); err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}
	if ok, _ := s.Finish(ctx, requests.QueuePermanent, winner, "reject", requests.StatusRejected, "m2", "no", later); ok {
		t.Fatal("finished twice")
	}
	got, err := s.Request(ctx, winner)
	if err != nil || got.Status != requests.StatusRejected || got.ResolvedBy != "m2" || got.ResolutionNote != "no" {
		t.Fatalf("resolved request %+v, %v", got, err)
	}
	// Once resolved, the link may have a new pending request.
	if err := s.InsertRequest(ctx, requests.Request{ID: "again", ShortCode: "abc1234", Status: requests.StatusPending, CreatedAt: later}); err != nil {
		t.Fatalf("a new request after the resolution: %v", err)
	}
	// Audit entries are written once per id.
	e := requests.AuditEntry{ID: "permanent_request:" + winner, ActorID: "m2", Action: "permanent_request.reject", CreatedAt: later}
	for range 2 {
		if err := s.InsertAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.audit.CountDocuments(ctx, map[string]any{}); err != nil || n != 1 {
		t.Fatalf("%d audit entries, %v; want 1", n, err)
	}
}

// Forgetting a user whose account goes: their audit entries lose the User-Agent (the keyed
// hash stays), their permanent requests go; another user's are left alone.
func TestForgetUser(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, who := range []string{"leaver", "stayer"} {
		if err := s.InsertAudit(ctx, requests.AuditEntry{ID: "a-" + who, ActorID: who, Action: "user.ban", TargetType: "user",
			TargetID: "x", IPHash: "hash-" + who, UserAgent: "Browser of " + who, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertRequest(ctx, requests.Request{ID: "r-" + who, ShortCode: "code-" + who, OwnerID: who, Reason: "mine",
			Status: requests.StatusPending, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // again, nothing more
		if err := s.Forget(ctx, "leaver"); err != nil {
			t.Fatal(err)
		}
	}
	entries, _, err := s.Audit(ctx, "", "", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.ActorID {
		case "leaver":
			if e.UserAgent != "" || e.IPHash != "hash-leaver" {
				t.Fatalf("the leaver's entry: %+v", e)
			}
		case "stayer":
			if e.UserAgent != "Browser of stayer" {
				t.Fatalf("another user's entry changed: %+v", e)
			}
		}
	}
	if _, err := s.Request(ctx, "r-leaver"); !errors.Is(err, requests.ErrNotFound) {
		t.Fatalf("the leaver's request: %v", err)
	}
	if _, err := s.Request(ctx, "r-stayer"); err != nil {
		t.Fatalf("another user's request: %v", err)
	}
}
