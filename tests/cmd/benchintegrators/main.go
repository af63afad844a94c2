// Command benchintegrators measures the integrators' API through the full stack, each
// figure against a baseline measured in the same run:
//
//   - a creation authenticated by an API token against the same creation with a session
//     (rounds alternate, one request at a time; target: token p50 ≤ 1.1× session p50);
//   - a bulk creation of 100 links against one creation (one request at a time; target: bulk
//     p50 ≤ 5× one creation's p50, not 100×);
//   - webhook delivery while links are created as fast as the machine allows: every
//     link.created event reaches a local receiver, and the lag from the event to its arrival
//     is reported (p50, p99), with the deliveries per second beside the creations per second.
//
// It exits with status 1, after printing every figure, when a target is missed.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/link"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

type opts struct {
	bin      string
	rounds   int
	round    time.Duration
	hookLoad time.Duration
	workers  int
	only     string
}

func main() {
	var o opts
	flag.StringVar(&o.bin, "bin", "bin", "directory of the service binaries")
	flag.IntVar(&o.rounds, "rounds", 5, "alternating rounds of each latency comparison")
	flag.DurationVar(&o.round, "round", 3*time.Second, "length of one round")
	flag.DurationVar(&o.hookLoad, "webhook-load", 10*time.Second, "how long links are created for the webhook run")
	flag.IntVar(&o.workers, "workers", 16, "parallel creations of the webhook run")
	flag.StringVar(&o.only, "only", "", "run only the comparisons whose name contains this text")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "benchintegrators:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o opts) error {
	rcv, err := startReceiver()
	if err != nil {
		return err
	}
	defer rcv.close()
	b, err := stack.StartBench(ctx, "benchintegrators", stack.ServicesOptions{BinDir: o.bin, Env: map[string]string{
		"LINKMESH_TOKEN_RATE":            "1000000",
		"LINKMESH_WEBHOOK_ALLOWED_CIDRS": "127.0.0.1/32",
	}})
	if err != nil {
		return err
	}
	defer b.Stop()
	gw := b.Services.GatewayURL
	acct, err := stack.Register(ctx, gw, "integrator@bench.example")
	if err != nil {
		return err
	}
	if err := b.SetQuotaLimit(ctx, acct.UserID, 1_000_000); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	secret, err := createToken(ctx, hc, gw, acct.Session)
	if err != nil {
		return err
	}
	var seq atomic.Int64
	one := func(decorate func(*http.Request)) func(context.Context) (time.Duration, error) {
		return func(ctx context.Context) (time.Duration, error) {
			_, took, err := stack.Shorten(ctx, hc, gw, fmt.Sprintf("https://93.184.216.34/int/%d", seq.Add(1)), decorate)
			return took, err
		}
	}
	session := one(stack.WithSession(acct.Session))
	token := one(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+secret) })
	bulk := func(ctx context.Context) (time.Duration, error) { return bulk100(ctx, hc, gw, acct.Session, &seq) }

	var missed []string
	for _, c := range []struct {
		name           string
		base, target   func(context.Context) (time.Duration, error)
		baseN, targetN string
		max            float64
	}{
		{"token vs session creation", session, token, "session", "token", 1.1},
		{"bulk of 100 vs one creation", session, bulk, "one", "bulk of 100", 5},
	} {
		if !strings.Contains(c.name, o.only) {
			continue
		}
		fmt.Printf("%s: %d alternating rounds of %s, one request at a time\n", c.name, o.rounds, o.round)
		var baseP50, targetP50 []time.Duration
		for i := range o.rounds {
			bs, err := sequential(ctx, o.round, c.base)
			if err != nil {
				return fmt.Errorf("%s: %w", c.baseN, err)
			}
			ts, err := sequential(ctx, o.round, c.target)
			if err != nil {
				return fmt.Errorf("%s: %w", c.targetN, err)
			}
			bp50, bp99 := stack.Percentiles(bs)
			tp50, tp99 := stack.Percentiles(ts)
			baseP50, targetP50 = append(baseP50, bp50), append(targetP50, tp50)
			fmt.Printf("  round %d: %-12s p50 %8s p99 %8s (%4d) | %-12s p50 %8s p99 %8s (%4d) | %.2f×\n", i+1,
				c.baseN, bp50.Round(10*time.Microsecond), bp99.Round(10*time.Microsecond), len(bs),
				c.targetN, tp50.Round(10*time.Microsecond), tp99.Round(10*time.Microsecond), len(ts), float64(tp50)/float64(bp50))
		}
		b50, t50 := median(baseP50), median(targetP50)
		ratio := float64(t50) / float64(b50)
		verdict := "met"
		if ratio > c.max {
			verdict = "MISSED"
			missed = append(missed, c.name)
		}
		fmt.Printf("  median p50: %s %s, %s %s: %.2f× (target ≤ %.1f×): %s\n\n", c.baseN, b50.Round(10*time.Microsecond),
			c.targetN, t50.Round(10*time.Microsecond), ratio, c.max, verdict)
	}

	if strings.Contains("webhook delivery", o.only) {
		// The links created so far owe events nobody subscribed to: they leave first, so the
		// run measures the delivery of its own.
		if err := settle(ctx, b); err != nil {
			return err
		}
		if err := webhooks(ctx, o, b, hc, gw, rcv, &seq); err != nil {
			missed = append(missed, "webhook delivery: "+err.Error())
		}
	}
	if len(missed) > 0 {
		return fmt.Errorf("benchmark target missed: %s", strings.Join(missed, "; "))
	}
	return nil
}

// webhooks creates links from o.workers accounts, each with a webhook subscribed to
// link.created (one account's creations share its quota's counter, which would cap the
// rate), for o.hookLoad, then waits for every event to arrive.
func webhooks(ctx context.Context, o opts, b *stack.Bench, hc *http.Client, gw string, rcv *receiver, seq *atomic.Int64) error {
	sessions := make([]string, o.workers)
	for i := range sessions {
		acct, err := stack.Register(ctx, gw, fmt.Sprintf("hooked%d@bench.example", i))
		if err != nil {
			return err
		}
		if err := b.SetQuotaLimit(ctx, acct.UserID, 1_000_000); err != nil {
			return err
		}
		body := fmt.Sprintf(`{"url":%q,"events":["link.created"]}`, rcv.url)
		if _, err := call(ctx, hc, http.MethodPost, gw+"/api/user/webhooks", body, acct.Session, http.StatusCreated); err != nil {
			return err
		}
		sessions[i] = acct.Session
	}
	fmt.Printf("webhook delivery: link.created to a local receiver while %d accounts create links for %s\n", o.workers, o.hookLoad)
	var created atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(o.hookLoad)
	var firstErr error
	var errOnce sync.Once
	for _, session := range sessions {
		wg.Go(func() {
			for time.Now().Before(end) && ctx.Err() == nil {
				if _, _, err := stack.Shorten(ctx, hc, gw, fmt.Sprintf("https://93.184.216.34/hook/%d", seq.Add(1)), stack.WithSession(session)); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				created.Add(1)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	elapsed := time.Since(start)
	want := created.Load()
	deadline := time.Now().Add(60 * time.Second)
	for rcv.count() < want && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	lags, last := rcv.lags()
	got := int64(len(lags))
	p50, p99 := stack.Percentiles(lags)
	fmt.Printf("  created %d links (%.0f/s); %d events delivered, the last %s after the last creation; lag p50 %s, p99 %s, max %s\n",
		want, float64(want)/elapsed.Seconds(), got, last.Sub(start.Add(elapsed)).Round(time.Millisecond),
		p50.Round(time.Millisecond), p99.Round(time.Millisecond), slices.Max(lags).Round(time.Millisecond))
	if err := stages(ctx, b, start); err != nil {
		return err
	}
	if got < want {
		return fmt.Errorf("%d of %d events delivered within a minute of the last creation", got, want)
	}
	if rate := float64(got) / last.Sub(start).Seconds(); rate < 0.95*float64(want)/elapsed.Seconds() {
		return fmt.Errorf("deliveries (%.0f/s) fell behind creations (%.0f/s)", rate, float64(want)/elapsed.Seconds())
	}
	fmt.Printf("  every event delivered, keeping up with creation: met\n")
	return nil
}

// stages splits the lag of the run's deliveries: from the event to its delivery record (the
// relay and the fan-out), and from the record to its delivery (the sender).
func stages(ctx context.Context, b *stack.Bench, since time.Time) error {
	cur, err := b.DB("link").Collection("webhook_deliveries").Find(ctx, bson.D{{Key: "status", Value: "delivered"}})
	if err != nil {
		return err
	}
	var docs []struct {
		Payload     string    `bson:"payload"`
		CreatedAt   time.Time `bson:"created_at"`
		DeliveredAt time.Time `bson:"delivered_at"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return err
	}
	var fan, send []time.Duration
	for _, d := range docs {
		var p struct {
			Timestamp time.Time `json:"timestamp"`
		}
		if json.Unmarshal([]byte(d.Payload), &p) != nil {
			continue
		}
		fan, send = append(fan, d.CreatedAt.Sub(p.Timestamp)), append(send, d.DeliveredAt.Sub(d.CreatedAt))
	}
	if len(fan) == 0 {
		return errors.New("no delivery recorded")
	}
	// The stream entry's id is when the relay appended it; an event appended again (still
	// in its outbox 15 s later) counts by its first entry.
	xs, err := b.Redis().XRange(ctx, link.EventStream, "-", "+").Result()
	if err != nil {
		return err
	}
	first := map[string]time.Duration{}
	for _, x := range xs {
		var e struct {
			ID string    `json:"id"`
			At time.Time `json:"at"`
		}
		var ms int64
		if s, ok := x.Values["event"].(string); ok && json.Unmarshal([]byte(s), &e) == nil && e.At.After(since) {
			if _, err := fmt.Sscanf(x.ID, "%d-", &ms); err == nil {
				if _, seen := first[e.ID]; !seen {
					first[e.ID] = time.UnixMilli(ms).Sub(e.At)
				}
			}
		}
	}
	var relay []time.Duration
	for _, d := range first {
		relay = append(relay, d)
	}
	if len(relay) > 0 {
		r50, r99 := stack.Percentiles(relay)
		fmt.Printf("  relay: event → on the stream p50 %s p99 %s (%d entries)\n", r50.Round(time.Millisecond), r99.Round(time.Millisecond), len(relay))
	}
	f50, f99 := stack.Percentiles(fan)
	s50, s99 := stack.Percentiles(send)
	fmt.Printf("  stages: event → delivery record (relay, stream, fan-out) p50 %s p99 %s; record → delivered (sender) p50 %s p99 %s\n",
		f50.Round(time.Millisecond), f99.Round(time.Millisecond), s50.Round(time.Millisecond), s99.Round(time.Millisecond))
	return nil
}

// settle waits until no link holds an event in its outbox, and two seconds more for the
// stream's consumers.
func settle(ctx context.Context, b *stack.Bench) error {
	links := b.DB("link").Collection("links")
	deadline := time.Now().Add(5 * time.Minute)
	for {
		n, err := links.CountDocuments(ctx, bson.D{{Key: "outbox_at", Value: bson.D{{Key: "$exists", Value: true}}}})
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d links still hold events after 5 minutes", n)
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	return nil
}

// sequential runs do one call at a time for d and returns each call's latency.
func sequential(ctx context.Context, d time.Duration, do func(context.Context) (time.Duration, error)) ([]time.Duration, error) {
	var out []time.Duration
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		took, err := do(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, took)
	}
	if len(out) == 0 {
		return nil, errors.New("no call completed")
	}
	return out, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// bulk100 creates 100 links in one bulk request and insists every item is a 201.
func bulk100(ctx context.Context, hc *http.Client, gw, session string, seq *atomic.Int64) (time.Duration, error) {
	items := make([]string, 100)
	for i := range items {
		items[i] = fmt.Sprintf(`{"url":"https://93.184.216.34/bulk/%d"}`, seq.Add(1))
	}
	t0 := time.Now()
	out, err := call(ctx, hc, http.MethodPost, gw+"/api/links/bulk", `{"links":[`+strings.Join(items, ",")+`]}`, session, http.StatusOK)
	took := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if n := bytes.Count(out, []byte(`"status":201`)); n != 100 {
		return 0, fmt.Errorf("bulk created %d of 100: %.300s", n, out)
	}
	return took, nil
}

func createToken(ctx context.Context, hc *http.Client, gw, session string) (string, error) {
	out, err := call(ctx, hc, http.MethodPost, gw+"/api/user/tokens", `{"name":"bench","scopes":["links:write"]}`, session, http.StatusCreated)
	if err != nil {
		return "", err
	}
	var t struct {
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(out, &t); err != nil || t.Secret == "" {
		return "", fmt.Errorf("create token: %s", out)
	}
	return t.Secret, nil
}

func call(ctx context.Context, hc *http.Client, method, url, body, session string, want int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	stack.WithSession(session)(req)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d %.300s", method, url, resp.StatusCode, out)
	}
	return out, nil
}

// receiver is a webhook receiver that records when each event arrived, by id.
type receiver struct {
	url  string
	srv  *http.Server
	mu   sync.Mutex
	seen map[string]bool
	lag  []time.Duration
	last time.Time
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	r := &receiver{url: "http://" + ln.Addr().String() + "/" + hex.EncodeToString(b[:]), seen: map[string]bool{}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	now := time.Now()
	var body struct {
		Timestamp time.Time `json:"timestamp"`
	}
	raw, _ := io.ReadAll(req.Body)
	_ = json.Unmarshal(raw, &body)
	r.mu.Lock()
	if id := req.Header.Get("webhook-id"); !r.seen[id] {
		r.seen[id] = true
		r.lag = append(r.lag, now.Sub(body.Timestamp))
		r.last = now
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(len(r.lag))
}

func (r *receiver) lags() ([]time.Duration, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lag), r.last
}

func (r *receiver) close() { _ = r.srv.Close() }
