// Command benchredirect measures, on the full linkmesh stack: warm GET /{code} against a
// bare Fiber handler answering 302 from a map, on the same core, in alternating rounds, with
// every visit recorded and with none; the latency of both under a fixed load offered at a
// constant rate (half the bare handler's saturation); tracing's cost; then how soon a click
// shows in its owner's analytics at light load; then the sustained click rate, load and
// drain included, with the same freshness probe running through it; then the analytics
// answer for a link with a year of history.
//
// The server under test (gateway or baseline) is pinned to one core and the load generator
// (wrk, or this binary's open loop) to the other, so the two never compete; the rounds
// alternate so drift on a shared machine hits both equally.
//
// It exits with status 1, after printing every figure, when a throughput ratio or the
// fixed-load latency misses its target, or a freshness, sustained or answer target is missed.
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
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

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
	// redirectOnly stops after the redirect's own phases (1, 1b, 1c, 1d).
	redirectOnly bool
	// hold keeps the system up, warm, for measuring by hand, until interrupted.
	hold bool
	// gatewayEnv are KEY=VALUE settings added to the gateway's environment.
	gatewayEnv []string
}

func main() {
	var o options
	baseline := flag.String("serve-baseline", "", "internal: serve the baseline on this address with codes from -codes")
	codesFile := flag.String("codes", "", "internal: file of code<TAB>destination lines for -serve-baseline")
	generate := flag.Bool("open-loop", false, "internal: offer the open-loop load described on stdin, and print what it measured")
	flag.StringVar(&o.bin, "bin", "bin", "directory of the service binaries")
	flag.IntVar(&o.links, "links", 1000, "links created and visited at random")
	flag.IntVar(&o.rounds, "rounds", 8, "alternating rounds of baseline and full stack")
	flag.DurationVar(&o.duration, "duration", 8*time.Second, "length of one wrk run (8 rounds of two runs span over 2 minutes, so every 30 s cache bound expires several times)")
	flag.IntVar(&o.conns, "connections", 32, "wrk connections")
	flag.StringVar(&o.serveCPU, "serve-cpu", "1", "core the server under test runs on")
	flag.StringVar(&o.loadCPU, "load-cpu", "0", "core wrk runs on")
	flag.Float64Var(&o.minRatio, "min-ratio", minRecorded, "least full-stack/baseline throughput ratio of any round with every visit recorded that passes; below it the exit status is 1")
	flag.IntVar(&o.tracingRounds, "tracing-rounds", 3, "alternating rounds of the gateway with tracing at 1 % and without (0 skips them)")
	flag.StringVar(&o.profile, "gateway-profile", "", "write the gateway's profiles over the full stack's runs, with every visit recorded and with none: CPU, mutex, block and allocations in round 1 (FILE-recorded-cpu-1, FILE-unrecorded-mutex-1, …), a runtime trace of 2 s in round 2 (FILE-recorded-trace-2), CPU in rounds 3-4")
	flag.Func("gateway-env", "KEY=VALUE added to the gateway's environment (repeatable; to try a setting)", func(kv string) error {
		o.gatewayEnv = append(o.gatewayEnv, kv)
		return nil
	})
	flag.BoolVar(&o.hold, "hold", false, "set the system up as for the rounds, print its addresses, and wait for an interrupt (to measure by hand)")
	flag.BoolVar(&o.redirectOnly, "redirect-only", false, "measure the redirect only (phases 1-1d), not the click pipeline's freshness, sustained rate and answer")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case *generate:
		err = serveOpenLoop(ctx)
	case *baseline != "":
		err = serveBaseline(ctx, *baseline, *codesFile)
	default:
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
	sopts.ServiceEnv = map[string]map[string]string{"gateway": {}}
	if o.profile != "" {
		sopts.ServiceEnv["gateway"]["LINKMESH_DEBUG_ADDR"] = debugAddr
	}
	for _, kv := range o.gatewayEnv {
		k, v, _ := strings.Cut(kv, "=")
		sopts.ServiceEnv["gateway"][k] = v
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

	if o.hold {
		fmt.Printf("holding: gateway %s, baseline %s, wrk script %s (without a User-Agent: %s)\n", svcs.GatewayURL, base.url, luaPath, noAgentScript(luaPath))
		<-ctx.Done()
		return nil
	}
	fmt.Printf("1. GET /{code} with every visit recorded (a browser's User-Agent), %d links at random, wrk -c%d for %s on core %s, servers on core %s, %d rounds\n\n",
		len(codes), o.conns, o.duration, o.loadCPU, o.serveCPU, o.rounds)
	recorded, err := alternate(ctx, o, base.url, svcs.GatewayURL, luaPath, o.rounds, "recorded")
	if err != nil {
		return err
	}
	b, f := median(recorded.base), median(recorded.full)
	fmt.Printf("\nmedian req/s: baseline %.0f, full stack %.0f → %.2f× (target ≥ %.2f×; every round ≥ %.2f×)\n\n", b, f, f/b, minMedianRecorded, o.minRatio)
	targets := append(recorded.targets("recorded", o.minRatio), target{name: "recorded median ratio", got: f / b, min: minMedianRecorded})

	// Without a User-Agent no visit is recorded: the gateway hands each over as ever, and the
	// recorder drops it before any enrichment or stream write. What is left is the redirect's
	// own work, which must stay near the bare handler's.
	fmt.Printf("1c. the same without a User-Agent (every visit handed over, then dropped before enrichment and the stream), %d rounds\n\n", o.rounds)
	unrecorded, err := alternate(ctx, o, base.url, svcs.GatewayURL, noAgentScript(luaPath), o.rounds, "unrecorded")
	if err != nil {
		return err
	}
	nb, nf := median(unrecorded.base), median(unrecorded.full)
	fmt.Printf("\nmedian req/s: baseline %.0f, full stack %.0f → %.2f× (every round ≥ %.2f×)\n\n", nb, nf, nf/nb, minUnrecorded)
	targets = append(targets, unrecorded.targets("unrecorded", minUnrecorded)...)

	fixed, err := runFixedLoad(ctx, o, base.url, svcs.GatewayURL, codes, b/2)
	if err != nil {
		return err
	}
	targets = append(targets, fixed...)

	if o.tracingRounds > 0 {
		tr, err := runTracing(ctx, o, svcs, codes, luaPath, o.tracingRounds)
		if err != nil {
			return err
		}
		targets = append(targets, tr)
	}

	if o.redirectOnly {
		return judge(targets...)
	}
	var visits int64
	for _, n := range recorded.requests {
		visits += n
	}
	if err := bench.DiscardStream(ctx, analytics.Stream); err != nil {
		return err
	}
	fmt.Printf("(the %d clicks of the warm-up and the rounds were recorded onto the stream, then discarded)\n", visits+int64(len(codes)))
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

// alternated is what alternating rounds of the baseline and the full stack measured.
type alternated struct {
	base, full []float64 // req/s
	requests   []int64   // the full stack's
}

// targets are the rounds' ratios, each at least min.
func (a alternated) targets(what string, min float64) []target {
	var ts []target
	for i := range a.base {
		ts = append(ts, target{name: fmt.Sprintf("%s round %d ratio", what, i+1), got: a.full[i] / a.base[i], min: min})
	}
	return ts
}

// alternate runs rounds of wrk against the baseline and the full stack, in alternating
// order so that drift on a shared machine hits both alike, the full stack with script
// (the baseline ignores the User-Agent). profile fetches the gateway's profiles in the
// first rounds when asked.
func alternate(ctx context.Context, o options, baseURL, fullURL, script string, rounds int, profile string) (alternated, error) {
	var a alternated
	fmt.Printf("%-7s %-10s %12s %10s %10s %8s\n", "round", "target", "req/s", "p50", "p99", "ratio")
	for r := 1; r <= rounds; r++ {
		order := []bool{false, true}
		if r%2 == 0 {
			order = []bool{true, false}
		}
		var b, f wrkResult
		for _, full := range order {
			url, s := baseURL, script
			var prof func() error
			if full {
				url = fullURL
				if o.profile != "" && r <= 4 {
					prof = fetchProfiles(ctx, o, profile, r)
				}
			}
			res, err := runWrk(ctx, o, url, s, o.duration)
			if prof != nil {
				if perr := prof(); perr != nil {
					fmt.Fprintln(os.Stderr, "profile:", perr)
				}
			}
			if err != nil {
				return a, err
			}
			if full {
				f = res
			} else {
				b = res
			}
		}
		fmt.Printf("%-7d %-10s %12.0f %10s %10s\n", r, "baseline", b.rps, b.p50, b.p99)
		fmt.Printf("%-7d %-10s %12.0f %10s %10s %7.2f×\n", r, "full", f.rps, f.p50, f.p99, f.rps/b.rps)
		a.base, a.full = append(a.base, b.rps), append(a.full, f.rps)
		a.requests = append(a.requests, f.requests)
	}
	return a, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// fetchProfiles starts fetching the gateway's profiles for round r's run (see the
// -gateway-profile flag) and returns the wait for them.
func fetchProfiles(ctx context.Context, o options, phase string, r int) func() error {
	kinds := map[int][]string{1: {"profile", "mutex", "block", "allocs"}, 2: {"trace"}, 3: {"profile"}, 4: {"profile"}}[r]
	var g errgroup.Group
	for _, kind := range kinds {
		d := o.duration - time.Second
		if kind == "trace" {
			d = 2 * time.Second
		}
		name := map[string]string{"profile": "cpu"}[kind]
		if name == "" {
			name = kind
		}
		g.Go(func() error {
			return stack.FetchProfileKind(ctx, debugAddr, kind, d, fmt.Sprintf("%s-%s-%s-%d", o.profile, phase, name, r))
		})
	}
	return g.Wait
}

// debugAddr serves the gateway's profiles when -gateway-profile is set.
const debugAddr = "127.0.0.1:16070"
