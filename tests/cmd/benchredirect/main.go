// Command benchredirect measures, on the full linkmesh stack: warm GET /{code} with click
// recording against a bare Fiber handler answering 302 from a map, on the same core, in
// alternating rounds; then how soon a click shows in its owner's analytics at light load;
// then the sustained click rate, load and drain included, with the same freshness probe
// running through it; then the analytics answer for a link with a year of history.
//
// The server under test (gateway or baseline) is pinned to one core and wrk to the other, so
// the two never compete; the rounds alternate so drift on a shared machine hits both equally.
//
// It exits with status 1, after printing every figure, when any round's ratio falls below
// -min-ratio or its p99 above 2 ms, or a freshness, sustained or answer target is missed.
package main

import (
	"github.com/linkmesh/linkmesh/pkg/clients/analytics"

	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

type options struct {
	bin      string
	links    int
	rounds   int
	duration time.Duration
	conns    int
	serveCPU string
	loadCPU  string
	minRatio float64
	profile  string
	// tracingRounds measure tracing's cost (phase 1b).
	tracingRounds int
}

func main() {
	var o options
	baseline := flag.String("serve-baseline", "", "internal: serve the baseline on this address with codes from -codes")
	codesFile := flag.String("codes", "", "internal: file of code<TAB>destination lines for -serve-baseline")
	flag.StringVar(&o.bin, "bin", "bin", "directory of the service binaries")
	flag.IntVar(&o.links, "links", 1000, "links created and visited at random")
	flag.IntVar(&o.rounds, "rounds", 8, "alternating rounds of baseline and full stack")
	flag.DurationVar(&o.duration, "duration", 8*time.Second, "length of one wrk run (8 rounds of two runs span over 2 minutes, so every 30 s cache bound expires several times)")
	flag.IntVar(&o.conns, "connections", 32, "wrk connections")
	flag.StringVar(&o.serveCPU, "serve-cpu", "1", "core the server under test runs on")
	flag.StringVar(&o.loadCPU, "load-cpu", "0", "core wrk runs on")
	flag.Float64Var(&o.minRatio, "min-ratio", minRatio, "least full-stack/baseline throughput ratio that passes; below it the exit status is 1")
	flag.IntVar(&o.tracingRounds, "tracing-rounds", 3, "alternating rounds of the gateway with tracing at 1 % and without (0 skips them)")
	flag.StringVar(&o.profile, "gateway-profile", "", "write CPU profiles of the gateway over the full stack's runs of rounds 1-4 to FILE-1 … FILE-4")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if *baseline != "" {
		err = serveBaseline(ctx, *baseline, *codesFile)
	} else {
		err = run(ctx, o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchredirect:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	pin := []string{"taskset", "-c", o.serveCPU}
	// The gateway is measured as the Helm chart deploys it: Prometheus metrics on.
	sopts := stack.ServicesOptions{BinDir: o.bin, Wrap: map[string][]string{"gateway": pin}, Metrics: true}
	if o.profile != "" {
		sopts.ServiceEnv = map[string]map[string]string{"gateway": {"LINKMESH_DEBUG_ADDR": debugAddr}}
	}
	bench, err := stack.StartBench(ctx, "bench", sopts)
	if err != nil {
		return err
	}
	defer bench.Stop()
	svcs, dir := bench.Services, bench.Dir

	owner, err := stack.Register(ctx, svcs.GatewayURL, "bench-owner@bench.example")
	if err != nil {
		return err
	}
	if err := bench.SetQuotaLimit(ctx, owner.UserID, 1000000); err != nil {
		return err
	}
	codes, err := createLinks(ctx, svcs.GatewayURL, owner.Session, o.links)
	if err != nil {
		return err
	}
	codesPath, luaPath := filepath.Join(dir, "codes.tsv"), filepath.Join(dir, "codes.lua")
	if err := writeCodes(codes, codesPath, luaPath); err != nil {
		return err
	}
	base, err := startBaseline(ctx, pin, codesPath)
	if err != nil {
		return err
	}
	defer base.stop()
	// The rounds measure the redirect with click recording (enrichment, the stream writes) on
	// the pinned core. Storing clicks is the analytics service's work, on other machines in
	// a deployment: here it would share the two cores with the servers under test, so it is
	// stopped, and the clicks of the rounds are discarded before phase 2 measures storage.
	svcs.StopService("analytics")
	// Warm both: every code once, so the measured runs are cache hits.
	for _, url := range []string{svcs.GatewayURL, base.url} {
		if err := visitAll(ctx, url, codes); err != nil {
			return err
		}
	}

	fmt.Printf("1. GET /{code} with click recording, %d links at random, wrk -c%d for %s on core %s, servers on core %s, %d rounds\n\n",
		len(codes), o.conns, o.duration, o.loadCPU, o.serveCPU, o.rounds)
	fmt.Printf("%-7s %-10s %12s %10s %10s %8s\n", "round", "target", "req/s", "p50", "p99", "ratio")
	var baseRPS, fullRPS []float64
	var fullRequests []int64
	var targets []target
	for r := 1; r <= o.rounds; r++ {
		order := []string{"baseline", "full"}
		if r%2 == 0 {
			order = []string{"full", "baseline"}
		}
		var b, f wrkResult
		for _, which := range order {
			url := base.url
			if which == "full" {
				url = svcs.GatewayURL
			}
			var prof chan error
			if which == "full" && o.profile != "" && r <= 4 {
				prof = make(chan error, 1)
				go func() {
					prof <- stack.FetchProfile(ctx, debugAddr, o.duration-time.Second, fmt.Sprintf("%s-%d", o.profile, r))
				}()
			}
			res, err := runWrk(ctx, o, url, luaPath, o.duration)
			if prof != nil {
				if perr := <-prof; perr != nil {
					fmt.Fprintln(os.Stderr, "profile:", perr)
				}
			}
			if err != nil {
				return err
			}
			if which == "full" {
				f = res
			} else {
				b = res
			}
		}
		ratio := f.rps / b.rps
		fmt.Printf("%-7d %-10s %12.0f %10s %10s\n", r, "baseline", b.rps, b.p50, b.p99)
		fmt.Printf("%-7d %-10s %12.0f %10s %10s %7.2f×\n", r, "full", f.rps, f.p50, f.p99, ratio)
		baseRPS, fullRPS = append(baseRPS, b.rps), append(fullRPS, f.rps)
		fullRequests = append(fullRequests, f.requests)
		targets = append(targets, target{name: fmt.Sprintf("round %d ratio", r), got: ratio, min: o.minRatio},
			target{name: fmt.Sprintf("round %d p99 ms", r), got: ms(f.p99Duration()), min: maxP99ms, atMost: true})
	}
	b, f := median(baseRPS), median(fullRPS)
	fmt.Printf("\nmedian req/s: baseline %.0f, full stack %.0f → %.2f×; every round must reach %.2f× with p99 ≤ %.0f ms\n", b, f, f/b, o.minRatio, maxP99ms)

	// What recording costs: one more pair of runs in which no visit carries a User-Agent, so
	// the gateway does all it does for a click (the cache, the handover to the recorder) but
	// the enrichment and the stream writes. Not a target: it tells the two parts apart.
	nb, err := runWrk(ctx, o, base.url, luaPath, o.duration)
	if err != nil {
		return err
	}
	nf, err := runWrk(ctx, o, svcs.GatewayURL, noAgentScript(luaPath), o.duration)
	if err != nil {
		return err
	}
	fmt.Printf("1c. the same without a User-Agent (every visit handed over, then dropped before enrichment and the stream):\n"+
		"    baseline %.0f req/s, full stack %.0f req/s (p99 %s) → %.2f×\n", nb.rps, nf.rps, nf.p99, nf.rps/nb.rps)

	if o.tracingRounds > 0 {
		tr, err := runTracing(ctx, o, svcs, codes, luaPath, o.tracingRounds)
		if err != nil {
			return err
		}
		targets = append(targets, tr)
	}

	var recorded int64
	for _, n := range fullRequests {
		recorded += n
	}
	if err := bench.DiscardStream(ctx, analytics.Stream); err != nil {
		return err
	}
	fmt.Printf("(the %d clicks of the warm-up and the rounds were recorded onto the stream, then discarded)\n", recorded+int64(len(codes)))
	if err := svcs.RestartService(ctx, "analytics"); err != nil {
		return err
	}
	probe, err := newProber(ctx, svcs.GatewayURL, "bench-probe@bench.example")
	if err != nil {
		return err
	}
	light, err := runFreshLight(ctx, probe)
	if err != nil {
		return err
	}
	sustained, peak, err := runSustained(ctx, o, svcs.GatewayURL, owner.Session, luaPath, b, probe)
	if err != nil {
		return err
	}
	targets = append(targets, light, sustained, peak)
	if err := clickStoreCeiling(ctx, bench, b); err != nil {
		return err
	}
	answer, err := runAnswer(ctx, bench, owner, codes)
	if err != nil {
		return err
	}
	targets = append(targets, answer)
	return judge(targets...)
}

// maxP99ms bounds the full stack's p99 in every round.
const maxP99ms = 2.0

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// debugAddr serves the gateway's profiles when -gateway-profile is set.
const debugAddr = "127.0.0.1:16070"
