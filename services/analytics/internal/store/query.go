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
// monthly rollups of the months the range touches (one read, at most 13 documents), plus the
// daily rollups of each month the range cuts through on a day with clicks. Its cost grows
// with the months asked for, not with the clicks.
func (s *Store) LinkAnalytics(ctx context.Context, linkID, code string, from, to time.Time) (analytics.LinkAnalytics, error) {
	fromDay, toDay := Day(from), Day(to)
	months, err := s.monthsOf(ctx, linkID, fromDay[:7], toDay[:7])
	if err != nil {
		return analytics.LinkAnalytics{}, err
	}
	byDay := map[string]analytics.Day{}
	var total Breakdowns
	out := analytics.LinkAnalytics{ShortCode: code, From: fromDay, To: toDay}
	for _, m := range months {
		// Each day's figures in range are added; whole tells whether no day of the month
		// outside the range has anything, so that the month's breakdowns are the range's.
		whole := true
		for day := 1; day <= 31; day++ {
			dd := fmt.Sprintf("%02d", day)
			clicks, visitors := m.Days[dd], m.Visitors[dd]
			if clicks == 0 && visitors == 0 {
				continue
			}
			date := m.Month + "-" + dd
			if date < fromDay || date > toDay {
				whole = false
				continue
			}
			d := byDay[date]
			d.Clicks += clicks
			d.UniqueVisitors += visitors
			byDay[date] = d
			out.TotalClicks += clicks
			out.UniqueVisitors += visitors
		}
		if whole {
			total.add(m.Breakdowns)
			continue
		}
		days, err := s.daysOfMonth(ctx, linkID, m.Month)
		if err != nil {
			return analytics.LinkAnalytics{}, err
		}
		for dd, b := range days {
			if day := m.Month + "-" + dd; day >= fromDay && day <= toDay {
				total.add(b)
			}
		}
	}
	for d := from.UTC().Truncate(24 * time.Hour); !d.After(to); d = d.AddDate(0, 0, 1) {
		day := Day(d)
		v := byDay[day]
		v.Date = day
		out.Timeseries = append(out.Timeseries, v)
	}
	unescaped := func(m map[string]int64) map[string]int64 {
		u := make(map[string]int64, len(m))
		for k, n := range m {
			u[unescapeKey(k)] += n
		}
		return u
	}
	out.Countries, out.Referrers, out.Devices = shares(unescaped(total.Countries)), shares(unescaped(total.Referrers)), shares(unescaped(total.Devices))
	out.Browsers, out.OperatingSystems = shares(unescaped(total.Browsers)), shares(unescaped(total.OSs))
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
	if ownerID != "" {
		var o struct {
			Clicks int64 `bson:"clicks"`
		}
		err := s.rollups.FindOne(ctx, bson.D{{Key: "_id", Value: ownerRollup(ownerID)}}).Decode(&o)
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
	ids := make([]string, len(linkIDs))
	for i, id := range linkIDs {
		ids[i] = linkRollup(id)
	}
	filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}}
	if ownerID != "" {
		filter = append(filter, bson.E{Key: "owner_id", Value: ownerID})
	}
	cur, err := s.rollups.Find(ctx, filter)
	if err != nil {
		return out, fmt.Errorf("read link totals: %w", err)
	}
	var ts []struct {
		LinkID string `bson:"link_id"`
		Clicks int64  `bson:"clicks"`
	}
	if err := cur.All(ctx, &ts); err != nil {
		return out, fmt.Errorf("read link totals: %w", err)
	}
	for _, t := range ts {
		out.Links[t.LinkID] = t.Clicks
	}
	return out, nil
}

// Totals are every link's clicks, all time and in the current hour and the 23 before it (by
// the time of the click). Two reads of a few documents, whatever the number of links and
// clicks. A purged link's clicks leave the all-time total once the purge is settled; the
// hourly ones age out within a day.
func (s *Store) Totals(ctx context.Context, now time.Time) (analytics.Totals, error) {
	var out analytics.Totals
	var all struct {
		Clicks int64 `bson:"clicks"`
	}
	err := s.rollups.FindOne(ctx, bson.D{{Key: "_id", Value: globalAll}}).Decode(&all)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return out, fmt.Errorf("read click total: %w", err)
	}
	out.Total = all.Clicks
	hours := make(bson.A, 0, 24)
	for i := range 24 {
		hours = append(hours, hourID(now.Add(-time.Duration(i)*time.Hour)))
	}
	cur, err := s.rollups.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: hours}}}})
	if err != nil {
		return out, fmt.Errorf("read hourly totals: %w", err)
	}
	var docs []struct {
		Clicks int64 `bson:"clicks"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return out, fmt.Errorf("read hourly totals: %w", err)
	}
	for _, d := range docs {
		out.Last24h += d.Clicks
	}
	return out, nil
}
