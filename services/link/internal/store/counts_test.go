package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// recount counts the stored links by state the slow way, every document read.
func recount(t *testing.T, s *Store, now time.Time) link.LinkCounts {
	t.Helper()
	cur, err := s.links.Find(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []doc
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	var c link.LinkCounts
	for _, d := range docs {
		l := fromDoc(d)
		switch {
		case l.Purge != nil:
			continue
		case l.DeletedAt != nil:
			c.Deleted++
		case l.Status == link.StatusDisabled:
			c.Disabled++
		case l.AutoRenew || links.ExpiryMinute(l.ExpiresAt) > ExpiredThrough(now):
			c.Active++
		default:
			c.Expired++
		}
		c.Total++
	}
	return c
}

// The counters on the real wire server stay exact under concurrent writers of the same
// links (renew, disable, enable, delete, auto-renew, purge marks), with links stored before
// the counters existed, and as expiry minutes pass; a batch added twice adds once.
func TestCountersStayExact(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	// Links from before the counters: stored without revisions or recorded changes.
	for i := range 5 {
		l := links.Link{ID: fmt.Sprintf("old%d", i), ShortCode: fmt.Sprintf("old%04d", i), DestinationURL: "https://x.example/",
			OwnerID: "o1", CreatedAt: now, ExpiresAt: now.Add(time.Duration(i-2) * time.Hour), Status: link.StatusActive}
		d := toDoc(l)
		if _, err := s.links.InsertOne(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FoldCounts(ctx, now); err != nil { // the backfill
		t.Fatal(err)
	}
	var batch []links.Link
	for i := range 40 {
		batch = append(batch, links.Link{ID: fmt.Sprintf("cnt%d", i), ShortCode: fmt.Sprintf("cnt%04d", i), DestinationURL: "https://x.example/",
			OwnerID: fmt.Sprintf("o%d", i%3), CreatedAt: now, ExpiresAt: now.Add(time.Duration(i%7) * time.Minute), Status: link.StatusActive})
	}
	if err := s.InsertMany(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	if got, want := mustCount(t, s), recount(t, s, now); got != want {
		t.Fatalf("after inserts: counters %+v, recount %+v", got, want)
	}

	// Eight writers change the same links at once, folds running meanwhile.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	folds := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				folds <- nil
				return
			default:
			}
			if err := s.FoldCounts(ctx, now); err != nil {
				folds <- err
				return
			}
		}
	}()
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range 40 {
				code := fmt.Sprintf("cnt%04d", r.IntN(40))
				var ch links.Change
				switch r.IntN(5) {
				case 0:
					ch.Status = ptr(link.StatusDisabled)
				case 1:
					ch.Status = ptr(link.StatusActive)
				case 2:
					ch.ExpiresAt = ptr(now.Add(time.Duration(r.IntN(300)-100) * time.Minute))
				case 3:
					ch.AutoRenew = ptr(r.IntN(2) == 0)
				case 4:
					ch.DeletedAt = ptr(now)
				}
				if err := s.Update(ctx, code, ch); err != nil && !errors.Is(err, links.ErrConflict) {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if _, err := s.DisableOwner(ctx, "o1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkPurge(ctx, "cnt5", links.PurgeMark{By: "m", At: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteByID(ctx, "cnt5"); err != nil {
		t.Fatal(err)
	}
	close(stop)
	if err := <-folds; err != nil {
		t.Fatal(err)
	}
	if err := s.FoldCounts(ctx, now); err != nil {
		t.Fatal(err)
	}
	if got, want := mustCount(t, s), recount(t, s, now); got != want {
		t.Fatalf("after concurrent writes: counters %+v, recount %+v", got, want)
	}
	if n, _ := s.changes.CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("%d recorded changes left after the fold", n)
	}

	// Minutes pass: links expire in the counters as their minute goes by.
	later := now.Add(3 * time.Hour)
	if err := s.FoldCounts(ctx, later); err != nil {
		t.Fatal(err)
	}
	if got, want := mustCount(t, s), recount(t, s, later); got != want || got.Expired == 0 {
		t.Fatalf("three hours on: counters %+v, recount %+v", got, want)
	}

	// A batch added again after a crash (before its write-ahead record was deleted) adds
	// nothing more.
	fresh := links.Link{ID: "fresh", ShortCode: "fresh01", DestinationURL: "https://x.example/", CreatedAt: later,
		ExpiresAt: later.Add(time.Hour), Status: link.StatusActive}
	if err := s.Insert(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	c, _ := s.readCounts(ctx)
	w, err := s.nextBatch(ctx, c.Through, later)
	if err != nil || w.n == 0 {
		t.Fatalf("batch %+v, %v", w, err)
	}
	for range 2 {
		if err := s.addBatch(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := mustCount(t, s), recount(t, s, later); got != want || w.All["scheduled"] != 1 {
		t.Fatalf("a batch added twice: counters %+v, recount %+v (batch %+v)", got, want, w)
	}
}

func mustCount(t *testing.T, s *Store) link.LinkCounts {
	t.Helper()
	c, err := s.CountStates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ptr[T any](v T) *T { return &v }
