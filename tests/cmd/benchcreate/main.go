// Command benchcreate measures link creation through the full stack: POST /api/links/shorten
// answered 201 per second, with p50 and p99, for many anonymous callers (each its own client
// address behind a trusted proxy) and for one signed-in caller creating in parallel. Every
// destination is an IP literal, so no DNS lookup is involved. After each run it checks that
// every 201 left a stored link: a creation counts only when it is durable.
//
// As baselines it measures, in the same run and on the same embedded store, from the same
// number of parallel writers: single-document inserts into a scratch collection, and the
// documents one creation writes (the caller's quota bucket and the link)
// on scratch copies of the services' collections — the store's ceiling, which no creation can
// beat. Each scenario's rate is judged as a share of that ceiling.
//
// It exits with status 1, after printing every figure, when a scenario misses -min-ratio or
// -max-p99.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

type opts struct {
	bin      string
	duration time.Duration
	workers  int
	minRatio float64
	maxP99   time.Duration
	profile  string
	only     string
	svcProf  string
}

func main() {
	var o opts
	flag.StringVar(&o.bin, "bin", "bin", "directory of the service binaries")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "length of one measured run")
	flag.IntVar(&o.workers, "workers", 32, "parallel requests in flight")
	flag.Float64Var(&o.minRatio, "min-ratio", 0.6, "least share of the store's rate for a creation's writes that passes")
	flag.DurationVar(&o.maxP99, "max-p99", 50*time.Millisecond, "largest p99 that passes")
	flag.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of the measured runs to this file; the embedded MongoDB wire server runs in this process")
	flag.StringVar(&o.svcProf, "service-profiles", "", "write CPU profiles of gateway, link and quota during each measured run into this directory")
	flag.StringVar(&o.only, "only", "", "run only the scenario whose name contains this text")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "benchcreate:", err)
		os.Exit(1)
	}
}

// result is one measured run.
type result struct {
	all      int64 // every successful call, warm-up included
	ok       int64 // the measured ones
	rate     float64
	p50, p99 time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("%8d %10.0f %10s %10s", r.ok, r.rate, r.p50.Round(100*time.Microsecond), r.p99.Round(100*time.Microsecond))
}

func run(ctx context.Context, o opts) error {
	debug := map[string]string{"gateway": "127.0.0.1:16061", "link": "127.0.0.1:16062", "quota": "127.0.0.1:16063"}
	perService := map[string]map[string]string{}
	if o.svcProf != "" {
		if err := os.MkdirAll(o.svcProf, 0o755); err != nil {
			return err
		}
		for svc, addr := range debug {
			perService[svc] = map[string]string{"LINKMESH_DEBUG_ADDR": addr}
		}
	}
	b, err := stack.StartBench(ctx, "benchcreate", stack.ServicesOptions{BinDir: o.bin, Env: map[string]string{
		"LINKMESH_ANON_QUOTA":      "100000000",
		"LINKMESH_TRUSTED_PROXIES": "127.0.0.1/32",
	}, ServiceEnv: perService})
	if err != nil {
		return err
	}
	defer b.Stop()
	gw := b.Services.GatewayURL

	acct, err := stack.Register(ctx, gw, "creator@bench.example")
	if err != nil {
		return err
	}
	if err := b.SetQuotaLimit(ctx, acct.UserID, 1000000); err != nil {
		return err
	}

	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: o.workers}}
	var seq atomic.Int64
	anonymous := func(ctx context.Context) (time.Duration, error) {
		n := seq.Add(1)
		// A distinct client address per creation: many callers, each within its own quota.
		addr := fmt.Sprintf("10.%d.%d.%d", n>>16&255, n>>8&255, n&255)
		return create(ctx, hc, gw, n, func(r *http.Request) { r.Header.Set("X-Forwarded-For", addr) })
	}
	signedIn := func(ctx context.Context) (time.Duration, error) {
		return create(ctx, hc, gw, seq.Add(1), stack.WithSession(acct.Session))
	}
	scratch := b.DB("scratch").Collection("inserts")
	insert := func(ctx context.Context) (time.Duration, error) {
		n := seq.Add(1)
		t0 := time.Now()
		_, err := scratch.InsertOne(ctx, bson.D{{Key: "_id", Value: n}, {Key: "destination_url", Value: fmt.Sprintf("https://93.184.216.34/bench/%d", n)}, {Key: "created_at", Value: time.Now()}})
		return time.Since(t0), err
	}

	// A creation's own writes, shaped and indexed as the services' (the quota bucket, new for
	// each caller, and the link), one after another as a creation does them: what the store
	// alone allows, before any service does its part.
	scratchOf := func(db, coll string) (*mongo.Collection, error) {
		c := b.DB("scratch").Collection(db + "_" + coll)
		return c, stack.CopyIndexes(ctx, b.DB(db).Collection(coll), c)
	}
	sLinks, err := scratchOf("link", "links")
	if err != nil {
		return err
	}
	sUsage, err := scratchOf("quota", "quota_usage")
	if err != nil {
		return err
	}
	if err := b.DB("scratch").CreateCollection(ctx, "inserts"); err != nil {
		return err
	}
	creationOps := func(ctx context.Context) (time.Duration, error) {
		n := seq.Add(1)
		t0 := time.Now()
		key, window := fmt.Sprintf("ip%d", n), time.Now().UTC().Format("2006-01-02T15:04Z")
		_, err := sUsage.InsertOne(ctx, bson.D{{Key: "identity_key", Value: key}, {Key: "scope", Value: "anonymous_create"}, {Key: "is_anonymous", Value: 1},
			{Key: "window_start", Value: window}, {Key: "count", Value: 1}, {Key: "expires_at", Value: time.Now().Add(24 * time.Hour)}})
		id, now := bson.NewObjectID().Hex(), time.Now().UTC()
		if err == nil {
			_, err = sLinks.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "short_code", Value: fmt.Sprintf("c%07d", n)},
				{Key: "destination_url", Value: fmt.Sprintf("https://93.184.216.34/bench/%d", n)}, {Key: "created_at", Value: now},
				{Key: "expires_at", Value: now.AddDate(0, 0, 30)}, {Key: "status", Value: "active"}, {Key: "auto_renew", Value: 0}, {Key: "rev", Value: 1}})
		}
		return time.Since(t0), err
	}
	stopProfile, err := stack.StartCPUProfile(o.profile)
	if err != nil {
		return err
	}
	defer stopProfile()
	fmt.Printf("POST /api/links/shorten with IP-literal destinations, %d requests in flight, %s per run\n\n", o.workers, o.duration)
	fmt.Printf("%-34s %8s %10s %10s %10s   %s\n", "run", "done", "per s", "p50", "p99", "verdict")
	links := b.DB("link").Collection("links")
	var missed []string
	var ceiling float64 // the store's rate for a creation's writes, measured first
	for _, s := range []struct {
		name   string
		do     func(context.Context) (time.Duration, error)
		target bool
	}{
		{"store baseline: one insert", insert, false},
		{"store baseline: a creation's writes", creationOps, false},
		{"many anonymous callers", anonymous, true},
		{"one signed-in caller", signedIn, true},
	} {
		if !strings.Contains(s.name, o.only) {
			continue
		}
		before, err := links.CountDocuments(ctx, bson.D{})
		if err != nil {
			return err
		}
		var profiles sync.WaitGroup
		if o.svcProf != "" && s.target {
			for svc, addr := range debug {
				profiles.Go(func() {
					path := fmt.Sprintf("%s/%s-%s.prof", o.svcProf, strings.ReplaceAll(s.name, " ", "-"), svc)
					if err := stack.FetchProfile(ctx, addr, o.duration+time.Second, path); err != nil {
						fmt.Fprintln(os.Stderr, "profile", svc, err)
					}
				})
			}
		}
		res, err := measure(ctx, o.workers, o.duration, s.do)
		profiles.Wait()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		verdict := "baseline"
		if s.target {
			// Every 201 must have left a link behind.
			after, err := links.CountDocuments(ctx, bson.D{})
			if err != nil {
				return err
			}
			if stored := after - before; stored != res.all {
				return fmt.Errorf("%s: %d creations answered 201 but %d links were stored", s.name, res.all, stored)
			}
			ratio := res.rate / ceiling
			verdict = fmt.Sprintf("%.2f× the store's writes: met", ratio)
			if ceiling == 0 || ratio < o.minRatio || res.p99 > o.maxP99 {
				verdict = fmt.Sprintf("%.2f× the store's writes: MISSED (≥ %.2f×, p99 ≤ %s)", ratio, o.minRatio, o.maxP99)
				missed = append(missed, s.name)
			}
		} else if s.name == "store baseline: a creation's writes" {
			ceiling = res.rate
		}
		fmt.Printf("%-34s %s   %s\n", s.name, res, verdict)
	}
	if len(missed) > 0 {
		return fmt.Errorf("benchmark target missed: %s", strings.Join(missed, ", "))
	}
	return nil
}

// create sends creation n and insists on a 201.
func create(ctx context.Context, hc *http.Client, gw string, n int64, decorate func(*http.Request)) (time.Duration, error) {
	_, took, err := stack.Shorten(ctx, hc, gw, fmt.Sprintf("https://93.184.216.34/bench/%d", n), decorate)
	return took, err
}

// measure runs do from workers goroutines for d after a one-second warm-up and returns the
// completed calls per second and the latency percentiles of the measured part.
func measure(parent context.Context, workers int, d time.Duration, do func(context.Context) (time.Duration, error)) (result, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	warm := time.Now().Add(time.Second)
	end := warm.Add(d)
	var (
		mu       sync.Mutex
		times    []time.Duration
		firstErr error
		wg       sync.WaitGroup
		all      atomic.Int64
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for {
				start := time.Now()
				if start.After(end) {
					break
				}
				took, err := do(ctx)
				if err != nil {
					mu.Lock()
					if firstErr == nil && !errors.Is(err, context.Canceled) {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					return
				}
				all.Add(1)
				if start.After(warm) && !time.Now().After(end) {
					mine = append(mine, took)
				}
			}
			mu.Lock()
			times = append(times, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := parent.Err(); err != nil {
		return result{}, err // interrupted: a partial run measures nothing
	}
	if firstErr != nil {
		return result{}, firstErr
	}
	if len(times) == 0 {
		return result{}, errors.New("no call completed")
	}
	p50, p99 := stack.Percentiles(times)
	return result{all: all.Load(), ok: int64(len(times)), rate: float64(len(times)) / d.Seconds(), p50: p50, p99: p99}, nil
}
