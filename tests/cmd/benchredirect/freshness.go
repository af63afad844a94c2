package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// Targets of click freshness: how long after its redirect a click shows in its owner's
// analytics (the dashboard's total).
const (
	// maxFreshLight bounds the p99 at light load: one visit at a time.
	maxFreshLight = 2 * time.Second
	// maxFreshPeak bounds the p99 during the sustained load.
	maxFreshPeak = 10 * time.Second
	// freshSamples is how many visits the light-load figure is made of.
	freshSamples = 50
)

// prober visits one link of its own owner and times until the owner's dashboard counts the
// visit. Its owner has no other link, so the count moves only with the probe's visits.
type prober struct {
	gw, session, code string
	client            *http.Client
	seen              int64
}

// newProber registers the probe's owner (email must be new) and creates its link.
func newProber(ctx context.Context, gw, email string) (*prober, error) {
	acct, err := stack.Register(ctx, gw, email)
	if err != nil {
		return nil, err
	}
	codes, err := createLinks(ctx, gw, acct.Session, 1)
	if err != nil {
		return nil, err
	}
	p := &prober{gw: gw, session: acct.Session,
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	for c := range codes {
		p.code = c
	}
	return p, nil
}

// probe makes one visit and returns the time from its answer until the dashboard counts it,
// polling every 20 ms for at most a minute.
func (p *prober) probe(ctx context.Context) (time.Duration, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.gw+"/"+p.code, nil)
	req.Header.Set("User-Agent", benchUserAgent)
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	answered := time.Now()
	if resp.StatusCode != http.StatusFound {
		return 0, fmt.Errorf("probe visit answered %d", resp.StatusCode)
	}
	want := p.seen + 1
	for {
		got, err := stack.OwnerClicks(ctx, p.gw, p.session)
		if err != nil {
			return 0, err
		}
		if got > want {
			return 0, fmt.Errorf("the probe's owner counts %d clicks after %d visits", got, want)
		}
		if got == want {
			p.seen = got
			return time.Since(answered), nil
		}
		if took := time.Since(answered); took > probeLimit {
			return took, errProbeLate
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// probeLimit is how long a probe waits for its click to be counted.
const probeLimit = time.Minute

// errProbeLate says a probe's click was not counted within probeLimit: the figure is then
// at least probeLimit, and the probes stop (later ones would count the late click too).
var errProbeLate = errors.New("a probe visit not counted within a minute")

// runFreshLight times freshSamples probes one after another on an idle system.
func runFreshLight(ctx context.Context, p *prober) (target, error) {
	var ds []time.Duration
	for range freshSamples {
		d, err := p.probe(ctx)
		if err != nil {
			return target{}, err
		}
		ds = append(ds, d)
	}
	p50, p99 := percentiles(ds)
	fmt.Printf("\n4a. freshness at light load: a click counted in its owner's analytics %s after its redirect (p50), %s (p99), %d visits one at a time\n",
		p50.Round(time.Millisecond), p99.Round(time.Millisecond), len(ds))
	return target{name: "freshness p99 ms, light load", got: ms(p99), min: ms(maxFreshLight), atMost: true}, nil
}

// freshDuring probes one visit after another until stop is closed (the sustained load runs
// meanwhile) and returns the target its p99 must meet.
func freshDuring(ctx context.Context, p *prober, stop <-chan struct{}) func() (target, error) {
	var (
		wg  sync.WaitGroup
		ds  []time.Duration
		err error
	)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			d, perr := p.probe(ctx)
			if errors.Is(perr, errProbeLate) {
				ds = append(ds, d)
				return
			}
			if err = perr; err != nil {
				return
			}
			ds = append(ds, d)
		}
	})
	return func() (target, error) {
		wg.Wait()
		if err != nil {
			return target{}, fmt.Errorf("freshness under load: %w", err)
		}
		if len(ds) == 0 {
			return target{}, fmt.Errorf("freshness under load: no probe finished")
		}
		p50, p99 := percentiles(ds)
		fmt.Printf("4b. freshness during the sustained load: %s (p50), %s (p99), %d visits one at a time\n",
			p50.Round(time.Millisecond), p99.Round(time.Millisecond), len(ds))
		return target{name: "freshness p99 ms, sustained load", got: ms(p99), min: ms(maxFreshPeak), atMost: true}, nil
	}
}

// percentiles returns the 50th and 99th percentiles of ds (nearest rank).
func percentiles(ds []time.Duration) (time.Duration, time.Duration) {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1)+0.5)] }
	return at(0.50), at(0.99)
}
