package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/testenv"
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

// A record is stored with its expiry, its creation plus the store's retention, which the TTL
// index on expires_at (expireAfterSeconds 0) deletes it at.
func TestLoginRecordsCarryTheirExpiry(t *testing.T) {
	ctx := context.Background()
	db := testenv.Mongo(t)
	created := ms(time.Now().Add(-time.Hour))
	for _, retention := range []time.Duration{48 * time.Hour, 400 * 24 * time.Hour} {
		s, err := New(ctx, db, retention)
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("r-%s", retention)
		if err := s.InsertLoginRecord(ctx, accounts.LoginRecord{ID: id, Email: "a@example.com", Method: accounts.MethodPassword,
			CreatedAt: created}); err != nil {
			t.Fatal(err)
		}
		var d recordDoc
		if err := s.records.FindOne(ctx, byID(id)).Decode(&d); err != nil || !d.ExpiresAt.Equal(created.Add(retention)) {
			t.Fatalf("record %s expires at %v, %v; want %v", id, d.ExpiresAt, err, created.Add(retention))
		}
	}
	for _, coll := range []string{LoginRecords, Sessions} {
		wantTTLIndex(t, db.Collection(coll))
	}
	if _, err := New(ctx, db, 0); err == nil {
		t.Fatal("a store without a login record retention was opened")
	}
}
