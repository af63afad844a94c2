package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
)

// LinkAnalytics answers for linkID over the days from..to (UTC dates, inclusive), from the
// daily rollups alone: its cost grows with the days, not the clicks.
func (s *Store) LinkAnalytics(ctx context.Context, linkID, code string, from, to time.Time) (analytics.LinkAnalytics, error) {
	fromDay, toDay := Day(from), Day(to)
	cur, err := s.daily.Find(ctx, bson.D{{Key: "link_id", Value: linkID}, {Key: "day", Value: bson.D{{Key: "$gte", Value: fromDay}, {Key: "$lte", Value: toDay}}}})
	if err != nil {
		return analytics.LinkAnalytics{}, fmt.Errorf("read daily rollups: %w", err)
	}
	var docs []struct {
		Day            string           `bson:"day"`
		Clicks         int64            `bson:"clicks"`
		UniqueVisitors int64            `bson:"unique_visitors"`
		Countries      map[string]int64 `bson:"countries"`
		Referrers      map[string]int64 `bson:"referrers"`
		Devices        map[string]int64 `bson:"devices"`
		Browsers       map[string]int64 `bson:"browsers"`
		OSs            map[string]int64 `bson:"oss"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return analytics.LinkAnalytics{}, fmt.Errorf("read daily rollups: %w", err)
	}
	byDay := map[string]analytics.Day{}
	countries, referrers, devices, browsers, oss := map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}, map[string]int64{}
	out := analytics.LinkAnalytics{ShortCode: code, From: fromDay, To: toDay}
	for _, d := range docs {
		byDay[d.Day] = analytics.Day{Date: d.Day, Clicks: d.Clicks, UniqueVisitors: d.UniqueVisitors}
		out.TotalClicks += d.Clicks
		out.UniqueVisitors += d.UniqueVisitors
		for _, b := range []struct{ into, from map[string]int64 }{
			{countries, d.Countries}, {referrers, d.Referrers}, {devices, d.Devices}, {browsers, d.Browsers}, {oss, d.OSs},
		} {
			for k, n := range b.from {
				b.into[unescapeKey(k)] += n
			}
		}
	}
	for d := from.UTC().Truncate(24 * time.Hour); !d.After(to); d = d.AddDate(0, 0, 1) {
		day := Day(d)
		if v, ok := byDay[day]; ok {
			out.Timeseries = append(out.Timeseries, v)
		} else {
			out.Timeseries = append(out.Timeseries, analytics.Day{Date: day})
		}
	}
	out.Countries, out.Referrers, out.Devices = shares(countries), shares(referrers), shares(devices)
	out.Browsers, out.OperatingSystems = shares(browsers), shares(oss)
	return out, nil
}

// shares sorts a breakdown by clicks, most first, then by value.
func shares(m map[string]int64) []analytics.Share {
	out := make([]analytics.Share, 0, len(m))
	for v, n := range m {
		if n > 0 {
			out = append(out, analytics.Share{Value: v, Clicks: n})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Clicks != out[j].Clicks {
			return out[i].Clicks > out[j].Clicks
		}
		return out[i].Value < out[j].Value
	})
	return out
}

// Counts returns the click totals of linkIDs (0 for a link without clicks) and, when
// ownerID is set, of all the owner's links, in at most two reads.
func (s *Store) Counts(ctx context.Context, ownerID string, linkIDs []string) (analytics.Counts, error) {
	out := analytics.Counts{Links: make(map[string]int64, len(linkIDs))}
	type total struct {
		ID     string `bson:"_id"`
		Clicks int64  `bson:"clicks"`
	}
	if ownerID != "" {
		var o total
		err := s.owners.FindOne(ctx, bson.D{{Key: "_id", Value: ownerID}}).Decode(&o)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return out, fmt.Errorf("read owner total: %w", err)
		}
		out.Owner = o.Clicks
	}
	for _, id := range linkIDs {
		out.Links[id] = 0
	}
	if len(linkIDs) == 0 {
		return out, nil
	}
	filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: linkIDs}}}}
	if ownerID != "" {
		// Narrows the read on a store that cannot use the _id index for $in (FerretDB).
		filter = append(filter, bson.E{Key: "owner_id", Value: ownerID})
	}
	cur, err := s.links.Find(ctx, filter)
	if err != nil {
		return out, fmt.Errorf("read link totals: %w", err)
	}
	var ts []total
	if err := cur.All(ctx, &ts); err != nil {
		return out, fmt.Errorf("read link totals: %w", err)
	}
	for _, t := range ts {
		out.Links[t.ID] = t.Clicks
	}
	return out, nil
}
