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
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

func TestStoreAgainstRealMongo(t *testing.T) {
	db := testenv.Mongo(t)
	ctx := context.Background()
	s, err := New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(ctx, db); err != nil {
		t.Fatalf("index creation must be idempotent: %v", err)
	}
	created := time.Date(2026, 11, 21, 10, 0, 0, 123_000_000, time.UTC)
	l := links.Link{ID: "id1", ShortCode: "Abc1234", DestinationURL: "https://example.com", CreatedAt: created,
		ExpiresAt: created.AddDate(0, 0, 30), Status: "ACTIVE", AutoRenew: true}
	if err := s.Insert(ctx, l); err != nil {
		t.Fatal(err)
	}
	got, err := s.FindByCode(ctx, "Abc1234")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != l.ID || !got.CreatedAt.Equal(l.CreatedAt) || !got.ExpiresAt.Equal(l.ExpiresAt) || !got.AutoRenew || got.OwnerID != "" {
		t.Fatalf("round trip changed the link: %+v", got)
	}
	if _, err := s.FindByCode(ctx, "abc1234"); !errors.Is(err, links.ErrNotFound) {
		t.Fatalf("codes are case-sensitive; got %v", err)
	}
	l.ID = "id2"
	if err := s.Insert(ctx, l); !errors.Is(err, links.ErrCodeTaken) {
		t.Fatalf("duplicate code: got %v", err)
	}
}

// The unique index, not a read-then-write, decides who gets a code: of many concurrent
// inserts of one code exactly one wins and the others are told the code is taken. On the
// embedded store such inserts deadlock (see Insert); without the turns there, 24 writers
// of one code can go on deadlocking until their attempts run out (one run of six rounds in
// six did, for 70 s; hence 24 rounds).
func TestConcurrentInsertsOfOneCode(t *testing.T) {
	db := testenv.Mongo(t)
	s, err := New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	raceOneCode(t, []*Store{s}, 24, 24)
}

// Replicas do not share turns: writers of one code in different replicas still meet in the
// store, and an insert the store aborted on a deadlock must still end as won or taken.
func TestConcurrentInsertsAcrossStores(t *testing.T) {
	db := testenv.Mongo(t)
	var stores []*Store
	for range 3 {
		s, err := New(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	raceOneCode(t, stores, 6, 12)
}

// raceOneCode has writers insert links of one code at once, spread over stores, for rounds
// codes, and wants exactly one to win each.
func raceOneCode(t *testing.T, stores []*Store, writers, rounds int) {
	t.Helper()
	ctx := context.Background()
	for round := range rounds {
		var ok, taken atomic.Int32
		var wg sync.WaitGroup
		code := fmt.Sprintf("race%d-%d", len(stores), round)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := stores[i%len(stores)].Insert(ctx, links.Link{ID: fmt.Sprintf("%s-%d", code, i), ShortCode: code, DestinationURL: "https://e.com", Status: "ACTIVE"})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, links.ErrCodeTaken):
					taken.Add(1)
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 1 || taken.Load() != int32(writers-1) {
			t.Fatalf("round %d: %d inserts won, %d lost; want 1 and %d", round, ok.Load(), taken.Load(), writers-1)
		}
	}
}
