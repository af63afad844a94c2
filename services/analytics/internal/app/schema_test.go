package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/analytics/internal/app"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// The migration reads the retention as the service does: it refuses one the service would
// refuse, and the step from schema 0 gives the clicks kept until then their expiry from the
// configured one (any other would have the TTL index delete, or keep, the wrong clicks).
func TestSchemaTakesTheConfiguredRetention(t *testing.T) {
	ctx := context.Background()
	db := testenv.Mongo(t)
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	if _, err := db.Collection(store.Clicks).InsertOne(ctx, bson.D{{Key: "_id", Value: "c0"}, {Key: "link_id", Value: "L1"},
		{Key: "owner_id", Value: "O1"}, {Key: "clicked_at", Value: at}, {Key: "day", Value: "2026-11-01"}, {Key: "slot", Value: int64(0)}}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LINKMESH_CLICK_RETENTION", "1h")
	if err := app.Schema.Migrate(ctx, db); err == nil || !strings.Contains(err.Error(), "LINKMESH_CLICK_RETENTION must be at least 48h0m0s") {
		t.Fatalf("a retention of 1h: %v, want it refused", err)
	}
	t.Setenv("LINKMESH_CLICK_RETENTION", "720h")
	if err := app.Schema.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var got struct {
		ExpiresAt time.Time `bson:"expires_at"`
	}
	if err := db.Collection(store.Clicks).FindOne(ctx, bson.D{{Key: "_id", Value: "c0"}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if want := at.Add(720 * time.Hour); !got.ExpiresAt.Equal(want) {
		t.Fatalf("the kept click expires at %s, want %s (clicked_at + LINKMESH_CLICK_RETENTION)", got.ExpiresAt, want)
	}
}
