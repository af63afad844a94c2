// Package analyticstest is the analytics service's test seam for benchmarks and end-to-end
// tests: it loads a link's history the way the service's own consumer counts it, with the
// service's store code, so a change of the store's internals cannot silently falsify them.
// It is never linked into the service.
package analyticstest

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// LoadHistory gives linkID (of ownerID) days days of history ending at now, total clicks
// spread evenly over the days and over a few countries, referrers, devices, browsers and
// systems each, in db (the analytics service's own database).
func LoadHistory(ctx context.Context, db *mongo.Database, linkID, ownerID string, days int, total int64, now time.Time) error {
	st, err := store.New(ctx, db, 90*24*time.Hour)
	if err != nil {
		return err
	}
	per := total / int64(days)
	for d := range days {
		clicks := per
		if d == 0 {
			clicks += total - per*int64(days)
		}
		split := func(values ...string) map[string]int64 {
			m := map[string]int64{}
			for i, v := range values {
				n := clicks / int64(len(values))
				if i == 0 {
					n += clicks - n*int64(len(values))
				}
				m[v] = n
			}
			return m
		}
		bd := map[string]map[string]int64{
			"countries": split("US", "GB", "DE", "FR", "Unknown"),
			"referrers": split("direct", "news.example.com", "t.co", "www.google.com"),
			"devices":   split("desktop", "mobile", "tablet"),
			"browsers":  split("Chrome", "Firefox", "Mobile Safari", "Edge"),
			"oss":       split("Windows", "iOS", "Android", "Mac OS X", "Linux"),
		}
		day := store.Day(now.AddDate(0, 0, -d))
		if err := st.Seed(ctx, linkID, ownerID, day, clicks, clicks/3, bd); err != nil {
			return fmt.Errorf("day %s: %w", day, err)
		}
	}
	return nil
}
