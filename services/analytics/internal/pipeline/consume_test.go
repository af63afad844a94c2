package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

var errCrash = errors.New("crash")

func newConsumer(t *testing.T, st *store.Store) *Consumer {
	t.Helper()
	return &Consumer{Store: st, Redis: testenv.Redis(t), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now,
		FlushInterval: time.Millisecond, SealAge: time.Nanosecond}
}

// crashAt fails the batch the first time it reaches step, as a crash there would.
func crashAt(step Step) func(Step) error {
	crashed := false
	return func(s Step) error {
		if s == step && !crashed {
			crashed = true
			return errCrash
		}
		return nil
	}
}

// A consumer that dies between any two steps of a batch (its entries not acknowledged)
// loses nothing and counts nothing twice, whether a fresh consumer takes the entries again,
// the consumer itself retries them, or the recovery pass finds the batch; entries delivered
// again after they were acknowledged count nothing.
func TestCrashBetweenStepsCountsOnce(t *testing.T) {
	st, err := store.New(context.Background(), testenv.Mongo(t), 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := time.Now().UTC()
	var total int64
	for _, step := range []Step{Inserted, Found, Applied, Finished} {
		for _, path := range []string{"fresh consumer", "same consumer", "recovery"} {
			link := testenv.Name("link")
			// One click already counted (a redelivery, so that the batch has a Found step),
			// one written twice by the producer, two visitors over five clicks.
			var msgs []stream.Message
			for i := range 5 {
				c := analytics.Click{EventID: fmt.Sprintf("%s-%d", link, i), LinkID: link, OwnerID: link + "-owner", ClickedAt: at,
					Country: []string{"GB", "DE"}[i%2], Referrer: "direct", DeviceType: analytics.DeviceDesktop, Browser: "Firefox", OS: "Linux",
					Visitor: fmt.Sprint("v", i%2)}
				msgs = append(msgs, stream.Message{ID: fmt.Sprint(i), Values: c.Fields()})
			}
			msgs = append(msgs, stream.Message{ID: "dup", Values: msgs[3].Values})
			if err := newConsumer(t, st).Handle(ctx, msgs[:1]); err != nil {
				t.Fatal(err)
			}
			dying := newConsumer(t, st)
			dying.SealAge = time.Hour // another's batch is never sealed for it
			dying.Hook = crashAt(step)
			if err := dying.Handle(ctx, msgs); !errors.Is(err, errCrash) {
				t.Fatalf("%s, %s: the crash did not happen: %v", step, path, err)
			}
			switch path {
			case "fresh consumer":
				err = newConsumer(t, st).Handle(ctx, msgs)
			case "same consumer":
				err = dying.Handle(ctx, msgs)
			case "recovery":
				err = newConsumer(t, st).Recover(ctx)
			}
			if err != nil {
				t.Fatalf("%s, %s: %v", step, path, err)
			}
			for range 2 { // delivered again after the acknowledgement
				if err := newConsumer(t, st).Handle(ctx, msgs); err != nil {
					t.Fatal(err)
				}
			}
			total += 5
			got, err := st.LinkAnalytics(ctx, link, "abc", at, at)
			if err != nil {
				t.Fatal(err)
			}
			counts, err := st.Counts(ctx, link+"-owner", []string{link})
			if err != nil {
				t.Fatal(err)
			}
			tot, err := st.Totals(ctx, at)
			if err != nil {
				t.Fatal(err)
			}
			if got.TotalClicks != 5 || got.UniqueVisitors != 2 || fmt.Sprint(got.Countries) != "[{GB 3} {DE 2}]" ||
				counts.Links[link] != 5 || counts.Owner != 5 || tot.Total != total || tot.Last24h != total {
				t.Fatalf("crash after %s, then %s: %d clicks, %d visitors, countries %v, counts %+v, totals %+v; want 5, 2, GB 3 DE 2, 5, %d",
					step, path, got.TotalClicks, got.UniqueVisitors, got.Countries, counts, tot, total)
			}
			if until, err := st.AppliedUntil(ctx, at); err != nil || !until.Equal(at) {
				t.Fatalf("crash after %s, then %s: clicks still pending (%v, %v)", step, path, until, err)
			}
		}
	}
}

// A click waits at most FlushInterval for its batch, and a consumer takes batches no
// closer together.
func TestBatchesArePaced(t *testing.T) {
	c := &Consumer{FlushInterval: 50 * time.Millisecond}
	c.init()
	start := time.Now()
	for range 3 {
		c.pace(context.Background())
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > time.Second {
		t.Fatalf("three batches took %s, want 100 ms and a little", took)
	}
}

// After a failed batch the stream worker retries its entries one at a time: those calls are
// not paced (a backlog of a thousand entries would otherwise wait minutes), and pacing
// resumes with the next call of several entries.
func TestRetriesOfOneEntryAreNotPaced(t *testing.T) {
	st, err := store.New(context.Background(), testenv.Mongo(t), 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := newConsumer(t, st)
	c.FlushInterval = 5 * time.Second
	c.Hook = crashAt(Inserted)
	link := testenv.Name("link")
	var msgs []stream.Message
	for i := range 4 {
		cl := analytics.Click{EventID: fmt.Sprintf("%s-%d", link, i), LinkID: link, OwnerID: "o", ClickedAt: time.Now(), Visitor: "v"}
		msgs = append(msgs, stream.Message{ID: fmt.Sprint(i), Values: cl.Fields()})
	}
	if err := c.Handle(ctx, msgs); !errors.Is(err, errCrash) {
		t.Fatalf("the batch did not fail: %v", err)
	}
	start := time.Now()
	for _, m := range msgs {
		if err := c.Handle(ctx, []stream.Message{m}); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("four retries of one entry took %s: paced", took)
	}
	a, err := st.LinkAnalytics(ctx, link, "x", time.Now().Add(-24*time.Hour), time.Now())
	if err != nil || a.TotalClicks != 4 {
		t.Fatalf("analytics %+v, %v; want 4 clicks", a, err)
	}
	start = time.Now()
	if err := c.Handle(ctx, msgs[:2]); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 4*time.Second {
		t.Fatalf("a call of two entries after the retries was not paced (%s)", took)
	}
}
