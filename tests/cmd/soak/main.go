// Command soak runs the whole system under mixed load for a while — mostly redirects, plus
// creations, logins, list, dashboard and analytics reads and abuse reports — and fails when
// a promise breaks: any answer but the intended ones (429 from a quota included as intended),
// resident memory or goroutines of a service growing, or a click not stored at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// Growth bounds between the first sample after warm-up and the last.
const (
	maxRSSGrowth       = 1.30 // resident memory may grow 30 %
	maxGoroutineGrowth = 1.25 // goroutines 25 % (plus a handful, for idle pools)
	goroutineSlack     = 10
	warmup             = 1 // samples (minutes) before the baseline
)

const browser = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"

// op is one kind of request of the mix, with the statuses it may answer.
type op struct {
	name   string
	weight int
	ok     []int
	build  func(rng *rand.Rand) *http.Request
}

type tally struct {
	mu       sync.Mutex
	times    map[string][]time.Duration
	statuses map[string]map[int]int
	errors   map[string][]string
	clicks   int64
}

func (t *tally) add(name string, status int, took time.Duration, ok bool, detail string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.times[name] = append(t.times[name], took)
	if t.statuses[name] == nil {
		t.statuses[name] = map[int]int{}
	}
	t.statuses[name][status]++
	if !ok && len(t.errors[name]) < 5 {
		t.errors[name] = append(t.errors[name], detail)
	}
	if name == "redirect" && status == http.StatusFound {
		t.clicks++
	}
}

func main() {
	bin := flag.String("bin", "bin", "directory of the service binaries")
	duration := flag.Duration("duration", 10*time.Minute, "length of the load")
	every := flag.Duration("sample", time.Minute, "how often memory and goroutines are sampled")
	workers := flag.Int("workers", 8, "concurrent clients")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *bin, *duration, *every, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, bin string, duration, every time.Duration, workers int) error {
	bench, err := stack.StartBench(ctx, "soak", stack.ServicesOptions{BinDir: bin, Metrics: true,
		Env: map[string]string{"LINKMESH_TRUSTED_PROXIES": "127.0.0.1/32"}})
	if err != nil {
		return err
	}
	defer bench.Stop()
	gw := bench.Services.GatewayURL
	owner, err := stack.Register(ctx, gw, "soak-owner@soak.example")
	if err != nil {
		return err
	}
	if err := bench.SetQuotaLimit(ctx, owner.UserID, 1_000_000); err != nil {
		return err
	}
	var codes []string
	for i := range 200 {
		code, _, err := stack.Shorten(ctx, http.DefaultClient, gw, fmt.Sprintf("https://93.184.216.34/soak/%d", i), stack.WithSession(owner.Session))
		if err != nil {
			return err
		}
		codes = append(codes, code)
	}
	cookie := &http.Cookie{Name: "go_session", Value: owner.Session}
	ip := func(rng *rand.Rand) string { return fmt.Sprintf("198.18.%d.%d", rng.IntN(200), 1+rng.IntN(250)) }
	req := func(method, path, body string, rng *rand.Rand, signedIn bool) *http.Request {
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		q, _ := http.NewRequest(method, gw+path, r)
		if body != "" {
			q.Header.Set("Content-Type", "application/json")
		}
		q.Header.Set("User-Agent", browser)
		q.Header.Set("X-Forwarded-For", ip(rng))
		if signedIn {
			q.AddCookie(cookie)
		}
		return q
	}
	code := func(rng *rand.Rand) string { return codes[rng.IntN(len(codes))] }
	ops := []op{
		{"redirect", 850, []int{302}, func(rng *rand.Rand) *http.Request { return req("GET", "/"+code(rng), "", rng, false) }},
		{"create", 40, []int{201}, func(rng *rand.Rand) *http.Request {
			return req("POST", "/api/links/shorten", fmt.Sprintf(`{"url":"https://93.184.216.34/soak/new/%d"}`, rng.Int()), rng, true)
		}},
		{"create-anonymous", 10, []int{201, 429}, func(rng *rand.Rand) *http.Request {
			return req("POST", "/api/links/shorten", `{"url":"https://93.184.216.34/soak/anon"}`, rng, false)
		}},
		{"login", 20, []int{200}, func(rng *rand.Rand) *http.Request {
			return req("POST", "/api/auth/login", `{"email":"soak-owner@soak.example","password":"bench-password"}`, rng, false)
		}},
		{"list", 30, []int{200}, func(rng *rand.Rand) *http.Request {
			return req("GET", "/api/user/links?page=1&page_size=20", "", rng, true)
		}},
		{"dashboard", 10, []int{200}, func(rng *rand.Rand) *http.Request { return req("GET", "/api/user/dashboard", "", rng, true) }},
		{"analytics", 30, []int{200}, func(rng *rand.Rand) *http.Request {
			return req("GET", "/api/user/links/"+code(rng)+"/analytics?days=7", "", rng, true)
		}},
		{"report", 10, []int{201, 429}, func(rng *rand.Rand) *http.Request {
			return req("POST", "/api/reports", fmt.Sprintf(`{"short_code":%q,"reason":"spam"}`, code(rng)), rng, false)
		}},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t := &tally{times: map[string][]time.Duration{}, statuses: map[string]map[int]int{}, errors: map[string][]string{}}

	fmt.Printf("soak: %s of mixed load from %d clients; memory and goroutines every %s\n\n", duration, workers, every)
	lctx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	var wg sync.WaitGroup
	for w := range workers {
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
		wg.Go(func() {
			for lctx.Err() == nil {
				n := rng.IntN(total)
				o := ops[0]
				for _, cand := range ops {
					if n < cand.weight {
						o = cand
						break
					}
					n -= cand.weight
				}
				// Requests run to their end past the deadline, so that every click the
				// gateway took is one the tally counts.
				q := o.build(rng).WithContext(ctx)
				t0 := time.Now()
				resp, err := hc.Do(q)
				took := time.Since(t0)
				if err != nil {
					t.add(o.name, 0, took, false, err.Error())
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				good := slices.Contains(o.ok, resp.StatusCode)
				t.add(o.name, resp.StatusCode, took, good, fmt.Sprintf("%d %.200s", resp.StatusCode, body))
			}
		})
	}
	samples := map[string][][2]float64{}
	tick := time.NewTicker(every)
	for done := false; !done; {
		select {
		case <-lctx.Done():
			done = true
		case <-tick.C:
			line := []string{time.Now().Format("15:04:05")}
			for _, name := range sortedKeys(bench.Services.MetricsURLs) {
				rss, gor, err := sample(hc, bench.Services.MetricsURLs[name])
				if err != nil {
					return fmt.Errorf("sample %s: %w", name, err)
				}
				samples[name] = append(samples[name], [2]float64{rss, gor})
				line = append(line, fmt.Sprintf("%s %.0f MiB/%.0f", name, rss/(1<<20), gor))
			}
			fmt.Println(strings.Join(line, "  "))
		}
	}
	tick.Stop()
	wg.Wait()

	var failures []string
	fmt.Printf("\n%-17s %9s %9s %9s  %s\n", "request", "count", "p50", "p99", "statuses")
	for _, o := range ops {
		p50, p99 := stack.Percentiles(t.times[o.name])
		fmt.Printf("%-17s %9d %9s %9s  %v\n", o.name, len(t.times[o.name]), p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), t.statuses[o.name])
		for _, e := range t.errors[o.name] {
			failures = append(failures, fmt.Sprintf("%s answered %s", o.name, e))
		}
	}
	fmt.Printf("\n%-12s %14s %14s %12s   (peaks of the first and last third after %d warm-up samples)\n", "process", "RSS first", "RSS last", "goroutines", warmup)
	for _, name := range sortedKeys(samples) {
		s := samples[name]
		if len(s) < warmup+3 {
			failures = append(failures, fmt.Sprintf("%s: %d samples, too few to judge growth (run longer)", name, len(s)))
			continue
		}
		// The peaks of the first and the last third after warm-up: memory that rises and
		// falls with the load (a password hash takes tens of MiB) is not growth, a rising
		// floor and ceiling is.
		s = s[warmup:]
		third := max(1, len(s)/3)
		first, last := peak(s[:third]), peak(s[len(s)-third:])
		rssGrowth, gorGrowth := last[0]/first[0], last[1]/first[1]
		fmt.Printf("%-12s %11.1f MiB %11.1f MiB %5.0f → %-5.0f RSS ×%.2f, goroutines ×%.2f\n", name, first[0]/(1<<20), last[0]/(1<<20), first[1], last[1], rssGrowth, gorGrowth)
		if rssGrowth > maxRSSGrowth {
			failures = append(failures, fmt.Sprintf("%s: resident memory grew ×%.2f (bound ×%.2f)", name, rssGrowth, maxRSSGrowth))
		}
		if last[1] > first[1]*maxGoroutineGrowth+goroutineSlack {
			failures = append(failures, fmt.Sprintf("%s: goroutines grew from %.0f to %.0f", name, first[1], last[1]))
		}
	}

	// Every redirect answered 302 is a click of the owner's links.
	start := time.Now()
	for {
		got, err := stack.OwnerClicks(ctx, gw, owner.Session)
		if err != nil {
			return err
		}
		if got == t.clicks {
			fmt.Printf("\nclicks: %d redirects, %d stored (%s after the load)\n", t.clicks, got, time.Since(start).Round(time.Second))
			break
		}
		if got > t.clicks || time.Since(start) > 5*time.Minute {
			failures = append(failures, fmt.Sprintf("clicks: %d redirects answered 302, the dashboard counts %d", t.clicks, got))
			break
		}
		time.Sleep(2 * time.Second)
	}
	if len(failures) > 0 {
		for _, f := range failures {
			fmt.Println("FAIL", f)
		}
		return fmt.Errorf("%d failures", len(failures))
	}
	fmt.Println("soak: every answer as intended, memory and goroutines flat, every click stored")
	return nil
}

// peak is the largest RSS and goroutine count among samples.
func peak(samples [][2]float64) [2]float64 {
	var p [2]float64
	for _, x := range samples {
		p[0], p[1] = max(p[0], x[0]), max(p[1], x[1])
	}
	return p
}

// sample reads a process's resident memory and goroutine count from its metrics.
func sample(hc *http.Client, url string) (rss, goroutines float64, err error) {
	resp, err := hc.Get(url)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	first := func(name string) float64 {
		f := fams[name]
		if f == nil || len(f.GetMetric()) == 0 {
			return 0
		}
		return f.GetMetric()[0].GetGauge().GetValue()
	}
	return first("process_resident_memory_bytes"), first("go_goroutines"), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
