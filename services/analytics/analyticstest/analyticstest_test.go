package analyticstest

import (
	"context"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// A loaded history reads back through the service's own query: every click, every day.
func TestLoadHistory(t *testing.T) {
	db := testenv.Mongo(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	if err := LoadHistory(ctx, db, "L1", "O1", 365, 1_000_001, now); err != nil {
		t.Fatal(err)
	}
	st, err := store.New(ctx, db, 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.LinkAnalytics(ctx, "L1", "c", now.AddDate(0, 0, -364), now)
	if err != nil || got.TotalClicks != 1_000_001 || len(got.Timeseries) != 365 || got.Timeseries[0].Clicks == 0 || len(got.Countries) != 5 {
		t.Fatalf("history: %d clicks over %d days, countries %v (%v)", got.TotalClicks, len(got.Timeseries), got.Countries, err)
	}
	var sum int64
	for _, c := range got.Countries {
		sum += c.Clicks
	}
	if sum != 1_000_001 {
		t.Fatalf("countries sum to %d", sum)
	}
	counts, err := st.Counts(ctx, "O1", []string{"L1"})
	if err != nil || counts.Links["L1"] != 1_000_001 {
		t.Fatalf("counts %+v %v", counts, err)
	}
}
