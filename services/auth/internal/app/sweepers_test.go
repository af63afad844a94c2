package app

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/config"
	"github.com/linkmesh/linkmesh/services/auth/internal/store"
)

// The service sweeps login records older than LINKMESH_LOGIN_RECORD_RETENTION, next to the
// expired sessions.
func TestSweepersDeleteOldLoginRecords(t *testing.T) {
	ctx := context.Background()
	st, err := store.New(ctx, testenv.Mongo(t))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	retention := 48 * time.Hour
	ages := map[string]time.Duration{"fresh": time.Hour, "at-the-edge": retention - time.Minute,
		"expired": retention + time.Minute, "ancient": 400 * 24 * time.Hour}
	for id, age := range ages {
		r := accounts.LoginRecord{ID: id, Email: "a@example.com", Method: accounts.MethodPassword, CreatedAt: now.Add(-age)}
		if err := st.InsertLoginRecord(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	byWhat := map[string]func(context.Context, time.Time) (int64, error){}
	for _, sw := range sweepers(&config.Config{LoginRecordRetention: retention}, st, slog.New(slog.DiscardHandler)) {
		if sw.Interval <= 0 || sw.Now == nil || sw.Logger == nil {
			t.Fatalf("sweeper %q is not set up to run: %+v", sw.What, sw)
		}
		byWhat[sw.What] = sw.Delete
	}
	if byWhat["sessions"] == nil || byWhat["login records"] == nil || len(byWhat) != 2 {
		t.Fatalf("sweepers = %v; want sessions and login records", byWhat)
	}
	if n, err := byWhat["login records"](ctx, now); err != nil || n != 2 {
		t.Fatalf("swept %d records, %v; want the 2 older than %s", n, err, retention)
	}
	left, total, err := st.LoginRecords(ctx, accounts.RecordFilter{}, 0, 10)
	if err != nil || total != 2 || left[0].ID != "fresh" || left[1].ID != "at-the-edge" {
		t.Fatalf("left %+v (%d), %v; want fresh and at-the-edge", left, total, err)
	}
}
