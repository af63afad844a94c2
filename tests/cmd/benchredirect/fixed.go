package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The latency the redirect must keep under a fixed load of half the bare handler's
// saturation rate, every visit recorded: at the median of the runs.
const (
	maxFixedP99  = 2 * time.Millisecond
	maxFixedP999 = 5 * time.Millisecond
)

// fixedRuns is how many alternating pairs of open-loop runs phase 1d makes; fixedRun is the
// length of each, after fixedWarm.
const (
	fixedRuns = 3
	fixedRun  = 10 * time.Second
	fixedWarm = 2 * time.Second
)

// runFixedLoad offers rate requests a second, at a constant rate, to the baseline and the
// gateway in alternating runs (every visit recorded), and returns the gateway's latency
// targets: the median over the runs of p99 and of p99.9.
func runFixedLoad(ctx context.Context, o options, baseURL, fullURL string, codes map[string]string, rate float64) ([]target, error) {
	paths := make([]string, 0, len(codes))
	for code := range codes {
		paths = append(paths, "/"+code)
	}
	slices.Sort(paths)
	fmt.Printf("1d. latency at a fixed load: %.0f req/s offered at a constant rate (half the baseline's median), every visit recorded, %d connections, %d runs of %s each\n\n",
		rate, o.conns, fixedRuns, fixedRun)
	fmt.Printf("%-5s %-10s %10s %10s %10s %10s %10s %8s\n", "run", "target", "sent/s", "p50", "p99", "p99.9", "max", "behind")
	var p99s, p999s []time.Duration
	for r := 1; r <= fixedRuns; r++ {
		order := []bool{false, true}
		if r%2 == 0 {
			order = []bool{true, false}
		}
		for _, full := range order {
			url, name := baseURL, "baseline"
			if full {
				url, name = fullURL, "full"
			}
			res, err := runOpenLoop(ctx, o, openLoopSpec{Addr: strings.TrimPrefix(url, "http://"), Paths: paths,
				UserAgent: benchUserAgent, Rate: rate, Conns: o.conns, Warm: fixedWarm, Duration: fixedRun})
			if err != nil {
				return nil, err
			}
			fmt.Printf("%-5d %-10s %10.0f %10s %10s %10s %10s %8d\n", r, name, res.Offered, round(res.P50), round(res.P99), round(res.P999), round(res.Max), res.Behind)
			if full {
				p99s, p999s = append(p99s, res.P99), append(p999s, res.P999)
			}
		}
	}
	p99, p999 := medianDuration(p99s), medianDuration(p999s)
	fmt.Printf("\nfull stack, median of the runs: p99 %s (target ≤ %s), p99.9 %s (target ≤ %s)\n\n", round(p99), maxFixedP99, round(p999), maxFixedP999)
	return []target{
		{name: "fixed-load p99 ms", got: ms(p99), min: ms(maxFixedP99), atMost: true},
		{name: "fixed-load p99.9 ms", got: ms(p999), min: ms(maxFixedP999), atMost: true},
	}, nil
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// round shows a latency to the microsecond.
func round(d time.Duration) string { return d.Round(time.Microsecond).String() }
