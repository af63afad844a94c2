package stream_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// consume has group read count new entries and acknowledge the first acked of them.
func consume(t *testing.T, rdb redis.UniversalClient, s, group string, count, acked int) {
	t.Helper()
	ctx := context.Background()
	if err := rdb.XGroupCreate(ctx, s, group, "0").Err(); err != nil {
		t.Fatal(err)
	}
	if count == 0 {
		return
	}
	res := must(rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: "c", Streams: []string{s, ">"},
		Count: int64(count), Block: -1}).Result())(t)
	var ids []string
	for _, m := range res[0].Messages[:acked] {
		ids = append(ids, m.ID)
	}
	if len(ids) > 0 {
		if err := rdb.XAck(ctx, s, group, ids...).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTrimAcknowledged(t *testing.T) {
	const n = 30
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, rdb redis.UniversalClient, s string)
		// trimmed is how many entries go; the first kept is the trimmed-th.
		trimmed int
	}{
		{name: "no group", setup: func(*testing.T, redis.UniversalClient, string) {}},
		{name: "every group acknowledged everything", trimmed: n, setup: func(t *testing.T, rdb redis.UniversalClient, s string) {
			consume(t, rdb, s, "g1", n, n)
			consume(t, rdb, s, "g2", n, n)
		}},
		{name: "a group has read nothing", setup: func(t *testing.T, rdb redis.UniversalClient, s string) {
			consume(t, rdb, s, "g1", n, n)
			consume(t, rdb, s, "g2", 0, 0)
		}},
		{name: "a group lags", trimmed: 15, setup: func(t *testing.T, rdb redis.UniversalClient, s string) {
			consume(t, rdb, s, "g1", n, n)
			consume(t, rdb, s, "g2", 15, 15)
		}},
		{name: "a group holds pending entries", trimmed: 10, setup: func(t *testing.T, rdb redis.UniversalClient, s string) {
			consume(t, rdb, s, "g1", 20, 10)
			consume(t, rdb, s, "g2", n, n)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb, s := testenv.Redis(t), testenv.Name("stream")
			ids := add(t, rdb, s, 0, n)
			tc.setup(t, rdb, s)
			got := must(stream.TrimAcknowledged(context.Background(), rdb, s))(t)
			if got != int64(tc.trimmed) || xlen(t, rdb, s) != int64(n-tc.trimmed) {
				t.Fatalf("trimmed %d, %d left; want %d trimmed, %d left", got, xlen(t, rdb, s), tc.trimmed, n-tc.trimmed)
			}
			if tc.trimmed < n {
				first := must(rdb.XRangeN(context.Background(), s, "-", "+", 1).Result())(t)
				if first[0].ID != ids[tc.trimmed] {
					t.Errorf("first entry kept is %s, want %s", first[0].ID, ids[tc.trimmed])
				}
			}
		})
	}
}

func TestTrimAcknowledgedLeavesMissingStreamAlone(t *testing.T) {
	rdb := testenv.Redis(t)
	if got, err := stream.TrimAcknowledged(context.Background(), rdb, testenv.Name("stream")); got != 0 || err != nil {
		t.Fatalf("TrimAcknowledged on a missing stream = %d, %v; want 0, nil", got, err)
	}
}

func TestWorkersTrimWhatEveryGroupAcknowledged(t *testing.T) {
	const n = 40
	fast := stream.WorkerOptions{TrimInterval: 100 * time.Millisecond}

	t.Run("both groups done", func(t *testing.T) {
		rdb, s := testenv.Redis(t), testenv.Name("stream")
		add(t, rdb, s, 0, n)
		for _, g := range []string{"g1", "g2"} {
			opts := fast
			opts.Stream, opts.Group, opts.Handler = s, g, newStore().handle
			run(t, newWorker(t, rdb, opts).Run)
		}
		eventually(t, "the stream trimmed", func() bool { return xlen(t, rdb, s) <= 1 })
	})

	t.Run("one group lagging", func(t *testing.T) {
		rdb, s := testenv.Redis(t), testenv.Name("stream")
		ids := add(t, rdb, s, 0, n)
		consume(t, rdb, s, "slow", 10, 5)
		opts := fast
		opts.Stream, opts.Group, opts.Handler = s, "fast", newStore().handle
		w := newWorker(t, rdb, opts)
		run(t, w.Run)
		eventually(t, "the fast group's trim", func() bool { return w.Stats().Acked == n && xlen(t, rdb, s) == n-5 })
		time.Sleep(500 * time.Millisecond) // several more trims, which must not go further
		first := must(rdb.XRangeN(context.Background(), s, "-", "+", 1).Result())(t)
		if got := xlen(t, rdb, s); got != n-5 || first[0].ID != ids[5] {
			t.Errorf("%d entries left from %s, want %d from the slow group's first pending %s", got, first[0].ID, n-5, ids[5])
		}
	})
}
