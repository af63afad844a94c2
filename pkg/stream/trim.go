package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// TrimAcknowledged deletes the entries of stream that every consumer group has
// acknowledged, and returns how many it deleted. For each group the first entry still
// needed is its oldest pending entry or, with nothing pending, the one after the last it
// was delivered; everything before the lowest of those goes. A lagging group therefore
// holds back the trim for all, and a group nobody reads any more holds it back for good
// (remove it with XGROUP DESTROY). A stream without groups is left alone: nobody has
// acknowledged anything.
//
// Every worker calls it; trimming is idempotent, so replicas racing each other are
// harmless.
func TrimAcknowledged(ctx context.Context, client redis.UniversalClient, stream string) (int64, error) {
	groups, err := client.XInfoGroups(ctx, stream).Result()
	if err != nil {
		if isReply(err, "ERR no such key") {
			return 0, nil
		}
		return 0, fmt.Errorf("list groups of %s: %w", stream, err)
	}
	if len(groups) == 0 {
		return 0, nil
	}
	needed := make([]string, 0, 2*len(groups))
	for _, g := range groups {
		next, err := nextID(g.LastDeliveredID)
		if err != nil {
			return 0, fmt.Errorf("read group %s: %w", g.Name, err)
		}
		needed = append(needed, next)
		// The summary is read after XINFO, so it may see entries delivered since; taking
		// the lower of both positions stays on the safe side of that race.
		p, err := client.XPending(ctx, stream, g.Name).Result()
		if err != nil {
			return 0, fmt.Errorf("read pending entries of group %s: %w", g.Name, err)
		}
		if p.Count > 0 {
			needed = append(needed, p.Lower)
		}
	}
	minID, err := lowestID(needed)
	if err != nil {
		return 0, err
	}
	n, err := client.XTrimMinID(ctx, stream, minID).Result()
	if err != nil {
		return 0, fmt.Errorf("trim %s to %s: %w", stream, minID, err)
	}
	return n, nil
}

// streamID is a parsed entry id, "<milliseconds>-<sequence>".
type streamID struct{ ms, seq uint64 }

func parseID(s string) (streamID, error) {
	msPart, seqPart, ok := strings.Cut(s, "-")
	if !ok {
		return streamID{}, fmt.Errorf("parse stream id %q: no sequence", s)
	}
	ms, err := strconv.ParseUint(msPart, 10, 64)
	if err != nil {
		return streamID{}, fmt.Errorf("parse stream id %q: %w", s, err)
	}
	seq, err := strconv.ParseUint(seqPart, 10, 64)
	if err != nil {
		return streamID{}, fmt.Errorf("parse stream id %q: %w", s, err)
	}
	return streamID{ms, seq}, nil
}

func (id streamID) String() string { return fmt.Sprintf("%d-%d", id.ms, id.seq) }

func (id streamID) less(o streamID) bool {
	return id.ms < o.ms || id.ms == o.ms && id.seq < o.seq
}

// nextID returns the smallest id after s.
func nextID(s string) (string, error) {
	id, err := parseID(s)
	if err != nil {
		return "", err
	}
	switch {
	case id.seq < math.MaxUint64:
		id.seq++
	case id.ms < math.MaxUint64:
		id.ms, id.seq = id.ms+1, 0
	}
	// At the very last id there is nothing after; trimming up to it keeps it, which is safe.
	return id.String(), nil
}

// lowestID returns the smallest of ids.
func lowestID(ids []string) (string, error) {
	if len(ids) == 0 {
		return "", errors.New("lowest stream id: no ids")
	}
	low, err := parseID(ids[0])
	if err != nil {
		return "", err
	}
	for _, s := range ids[1:] {
		id, err := parseID(s)
		if err != nil {
			return "", err
		}
		if id.less(low) {
			low = id
		}
	}
	return low.String(), nil
}
