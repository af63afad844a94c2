package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/services/analytics/analyticstest"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// Targets of the click pipeline.
const (
	// minSustained is the share of the bare handler's rate at which clicks must be taken
	// and made visible, load and drain included.
	minSustained = 0.10
	// maxAnswerMs bounds the median analytics answer for a link with a year of history.
	maxAnswerMs = 20.0
	// sustainedLoad is how long the sustained load lasts.
	sustainedLoad = 30 * time.Second
	// answerClicks is the history of the link the analytics answer is timed on.
	answerClicks = 1_000_000
)

// waitForClicks waits until the owner's dashboard counts at least want clicks and returns
// how long that took and the count. wrk counts only the answers it read before its end, so
// up to inFlight more visits may have been answered and counted; beyond that is an error, as
// is no progress for two minutes.
func waitForClicks(ctx context.Context, gw, session string, want, inFlight int64) (time.Duration, int64, error) {
	start, last, lastChange := time.Now(), int64(-1), time.Now()
	for {
		got, err := stack.OwnerClicks(ctx, gw, session)
		if err != nil {
			return 0, 0, err
		}
		switch {
		case got > want+inFlight:
			return 0, 0, fmt.Errorf("the dashboard counts %d clicks, more than the %d visits and %d in flight", got, want, inFlight)
		case got >= want:
			return time.Since(start), got, nil
		case got != last:
			last, lastChange = got, time.Now()
		case time.Since(lastChange) > 2*time.Minute:
			return 0, 0, fmt.Errorf("clicks stuck at %d of %d", got, want)
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// runSustained loads the gateway for sustainedLoad, the owner's clicks counting from zero,
// and times until the analytics answers count every one of its clicks.
func runSustained(ctx context.Context, o options, gw, session, luaPath string, bareRPS float64, probe *prober) (target, target, error) {
	stop := make(chan struct{})
	fresh := freshDuring(ctx, probe, stop)
	res, err := runWrk(ctx, o, gw, luaPath, sustainedLoad)
	close(stop)
	if err != nil {
		return target{}, target{}, err
	}
	drain, counted, err := waitForClicks(ctx, gw, session, res.requests, int64(o.conns))
	if err != nil {
		return target{}, target{}, fmt.Errorf("after the sustained load: %w", err)
	}
	// Nothing more may arrive.
	time.Sleep(5 * time.Second)
	if final, err := stack.OwnerClicks(ctx, gw, session); err != nil || final != counted {
		return target{}, target{}, fmt.Errorf("after the sustained load: %d clicks counted, then %d (%v)", counted, final, err)
	}
	rate := float64(res.requests) / (sustainedLoad + drain).Seconds()
	fmt.Printf("\n2. sustained: %d visits answered in %s (%.0f req/s, p99 %s); %d clicks counted (up to %d more than wrk read were\n"+
		"   in flight when it stopped), all visible in the analytics %s after the load:\n"+
		"   %.0f clicks/s = %.3f× the bare handler's %.0f req/s; none dropped\n",
		res.requests, sustainedLoad, res.rps, res.p99, counted, o.conns, drain.Round(100*time.Millisecond), rate, rate/bareRPS, bareRPS)
	peak, err := fresh()
	if err != nil {
		return target{}, target{}, err
	}
	return target{name: "sustained clicks/s vs bare req/s", got: rate / bareRPS, min: minSustained}, peak, nil
}

// runAnswer gives one of the owner's links a year of history, 1,000,000 clicks, and times
// its analytics answer over 365 days.
func runAnswer(ctx context.Context, b *stack.Bench, owner stack.Account, codes map[string]string) (target, error) {
	var code string
	for c := range codes {
		code = c
		break
	}
	var l struct {
		ID string `bson:"_id"`
	}
	if err := b.DB("link").Collection("links").FindOne(ctx, bson.D{{Key: "short_code", Value: code}}).Decode(&l); err != nil {
		return target{}, err
	}
	if err := analyticstest.LoadHistory(ctx, b.DB("analytics"), l.ID, owner.UserID, 365, answerClicks, time.Now()); err != nil {
		return target{}, err
	}
	p50, p99, err := stack.TimeGET(ctx, b.Services.GatewayURL, "/api/user/links/"+code+"/analytics?days=365", owner.Session, 10, 50,
		func(body []byte) error {
			var a struct {
				TotalClicks int64 `json:"total_clicks"`
			}
			if err := json.Unmarshal(body, &a); err != nil || a.TotalClicks < answerClicks {
				return fmt.Errorf("%d clicks, %v", a.TotalClicks, err)
			}
			return nil
		})
	if err != nil {
		return target{}, err
	}
	fmt.Printf("\n3. analytics answer, 365 days of a link with %d clicks: p50 %s, p99 %s (%d requests, one at a time)\n",
		answerClicks, p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), 50)
	return target{name: "analytics answer p50 ms", got: ms(p50), min: maxAnswerMs, atMost: true}, nil
}
