package store

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A link's analytics are read from its monthly rollups, whatever the days asked for: a
// month's rollup holds the month's clicks, visitors and breakdowns, and each day's clicks
// ("days.DD") and visitors ("visitors.DD"). The breakdowns of a month the range cuts through
// on a day with clicks come from that month's daily rollups. Per-day breakdowns stay in the
// daily rollups so that a month's rollup, rewritten by every batch that counts a click of
// its link, stays small.

// monthDoc is a link's monthly rollup.
type monthDoc struct {
	Month          string           `bson:"month"`
	Clicks         int64            `bson:"clicks"`
	UniqueVisitors int64            `bson:"unique_visitors"`
	Days           map[string]int64 `bson:"days"`
	Visitors       map[string]int64 `bson:"visitors"`
	Breakdowns     `bson:",inline"`
}

// Breakdowns is the clicks per value of each breakdown, keys escaped (escapeKey).
type Breakdowns struct {
	Countries map[string]int64 `bson:"countries,omitempty"`
	Referrers map[string]int64 `bson:"referrers,omitempty"`
	Devices   map[string]int64 `bson:"devices,omitempty"`
	Browsers  map[string]int64 `bson:"browsers,omitempty"`
	OSs       map[string]int64 `bson:"oss,omitempty"`
}

// fields are the breakdowns by their field names, as the rollups store them.
func (b *Breakdowns) fields() map[string]*map[string]int64 {
	return map[string]*map[string]int64{"countries": &b.Countries, "referrers": &b.Referrers, "devices": &b.Devices, "browsers": &b.Browsers, "oss": &b.OSs}
}

// add adds o's clicks to b's.
func (b *Breakdowns) add(o Breakdowns) {
	mine := b.fields()
	for f, theirs := range o.fields() {
		for k, n := range *theirs {
			if *mine[f] == nil {
				*mine[f] = map[string]int64{}
			}
			(*mine[f])[k] += n
		}
	}
}

// idRange matches the ids from first to last, both included.
func idRange(first, last string) bson.D {
	return bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: first}, {Key: "$lte", Value: last}}}}
}

// monthsOf reads the monthly rollups of link from month from to month to ("YYYY-MM"): one
// read of the _id index.
func (s *Store) monthsOf(ctx context.Context, link, from, to string) ([]monthDoc, error) {
	cur, err := s.rollups.Find(ctx, idRange(monthRollup(link, from), monthRollup(link, to)))
	if err != nil {
		return nil, fmt.Errorf("read monthly rollups: %w", err)
	}
	var docs []monthDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read monthly rollups: %w", err)
	}
	return docs, nil
}

// daysOfMonth reads the breakdowns of each day of link in month, by "DD", from the daily
// rollups.
func (s *Store) daysOfMonth(ctx context.Context, link, month string) (map[string]Breakdowns, error) {
	cur, err := s.rollups.Find(ctx, idRange(dayRollup(link, month+"-01"), dayRollup(link, month+"-31")))
	if err != nil {
		return nil, fmt.Errorf("read daily rollups of %s: %w", month, err)
	}
	var docs []struct {
		Day        string `bson:"day"`
		Breakdowns `bson:",inline"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read daily rollups of %s: %w", month, err)
	}
	out := make(map[string]Breakdowns, len(docs))
	for _, d := range docs {
		if len(d.Day) == len(time.DateOnly) {
			out[d.Day[8:]] = d.Breakdowns
		}
	}
	return out, nil
}
