package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

func TestLoginRecordFiltersAndPaging(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	base := ms(time.Now().Add(-time.Hour))
	// 25 records: i%5==0 succeed; ada has the even ones, bob the odd ones.
	for i := range 25 {
		r := accounts.LoginRecord{ID: fmt.Sprintf("r%02d", i), Email: "bob@example.com", UserID: "bob",
			Success: i%5 == 0, Method: accounts.MethodPassword, IPHash: "ab", UserAgent: "ua",
			CreatedAt: base.Add(time.Duration(i) * time.Second)}
		if i%2 == 0 {
			r.Email, r.UserID = "ada@example.com", "ada"
		}
		if !r.Success {
			r.Reason = accounts.ReasonWrongPassword
		}
		if err := s.InsertLoginRecord(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	yes, no := true, false
	cases := []struct {
		name        string
		f           accounts.RecordFilter
		skip, limit int64
		total       int64
		ids         []string
	}{
		{"newest first", accounts.RecordFilter{}, 0, 3, 25, []string{"r24", "r23", "r22"}},
		{"second page", accounts.RecordFilter{}, 3, 3, 25, []string{"r21", "r20", "r19"}},
		{"last partial page", accounts.RecordFilter{}, 20, 10, 25, []string{"r04", "r03", "r02", "r01", "r00"}},
		{"past the end", accounts.RecordFilter{}, 25, 10, 25, nil},
		{"far past the end", accounts.RecordFilter{}, 1 << 62, 10, 25, nil},
		{"by user", accounts.RecordFilter{UserID: "ada"}, 0, 3, 13, []string{"r24", "r22", "r20"}},
		{"by email", accounts.RecordFilter{Email: "bob@example.com"}, 0, 2, 12, []string{"r23", "r21"}},
		{"successes", accounts.RecordFilter{Success: &yes}, 0, 10, 5, []string{"r20", "r15", "r10", "r05", "r00"}},
		{"failures of ada", accounts.RecordFilter{UserID: "ada", Success: &no}, 0, 2, 10, []string{"r24", "r22"}},
		{"nothing matches", accounts.RecordFilter{Email: "eve@example.com"}, 0, 10, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, total, err := s.LoginRecords(ctx, tc.f, tc.skip, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range recs {
				ids = append(ids, r.ID)
			}
			if total != tc.total || fmt.Sprint(ids) != fmt.Sprint(tc.ids) {
				t.Fatalf("got %v (total %d), want %v (total %d)", ids, total, tc.ids, tc.total)
			}
		})
	}
	recs, _, _ := s.LoginRecords(ctx, accounts.RecordFilter{UserID: "ada"}, 0, 1)
	if r := recs[0]; r.Email != "ada@example.com" || r.Method != "password" || r.IPHash != "ab" || r.UserAgent != "ua" ||
		!r.CreatedAt.Equal(base.Add(24*time.Second)) || r.Reason != accounts.ReasonWrongPassword {
		t.Fatalf("record round trip: %+v", r)
	}
}

// Records older than the cutoff go, in batches; newer ones, and one exactly at it, stay.
func TestDeleteLoginRecordsBefore(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	cutoff := ms(time.Now().Add(-90 * 24 * time.Hour))
	cases := []struct {
		name       string
		old, young int
	}{
		{"nothing old", 0, 3},
		{"fewer than a batch", 7, 3},
		{"more than a batch", 2*sweepBatch + 1, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.records.DeleteMany(ctx, bson.D{}); err != nil {
				t.Fatal(err)
			}
			var docs []any
			for i := range tc.old {
				docs = append(docs, recordDoc{ID: fmt.Sprintf("old-%04d", i), Email: "a@example.com",
					CreatedAt: cutoff.Add(-time.Duration(i+1) * time.Millisecond)})
			}
			for i := range tc.young {
				docs = append(docs, recordDoc{ID: fmt.Sprintf("young-%d", i), Email: "a@example.com",
					CreatedAt: cutoff.Add(time.Duration(i) * time.Hour)}) // young-0 is exactly at the cutoff
			}
			if _, err := s.records.InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			n, err := s.DeleteLoginRecordsBefore(ctx, cutoff)
			if err != nil || n != int64(tc.old) {
				t.Fatalf("deleted %d, %v; want %d", n, err, tc.old)
			}
			left, _, err := s.LoginRecords(ctx, accounts.RecordFilter{}, 0, 100)
			if err != nil || len(left) != tc.young {
				t.Fatalf("%d records left, %v; want the %d young ones", len(left), err, tc.young)
			}
			for _, r := range left {
				if r.CreatedAt.Before(cutoff) {
					t.Fatalf("an old record survived: %+v", r)
				}
			}
		})
	}
}
