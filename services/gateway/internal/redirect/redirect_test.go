package redirect

import (
	"context"

	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clicks"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clientip"
	"go.opentelemetry.io/otel/trace/noop"
)

type fakeResolver struct {
	mu    sync.Mutex
	links map[string]link.Resolved
	calls atomic.Int32
	delay time.Duration
	fail  error
	gate  chan struct{} // when set, Resolve waits for it to close
}

func (f *fakeResolver) Resolve(_ context.Context, code string) (link.Resolved, error) {
	f.calls.Add(1)
	time.Sleep(f.delay)
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return link.Resolved{}, f.fail
	}
	r, ok := f.links[code]
	if !ok {
		return link.Resolved{}, errs.NotFound("short link not found")
	}
	return r, nil
}

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// visits records what the handler hands over.
type visits struct {
	mu   sync.Mutex
	list []clicks.Visit
}

// Record keeps copies, as Recorder asks: the strings alias the request's buffers.
func (v *visits) Record(x clicks.Visit) {
	x.UserAgent, x.Referer, x.EdgeCountry = strings.Clone(x.UserAgent), strings.Clone(x.Referer), strings.Clone(x.EdgeCountry)
	v.mu.Lock()
	defer v.mu.Unlock()
	v.list = append(v.list, x)
}

func newTestApp(res *fakeResolver) (*server.Server, *Cache) {
	s, c, _ := newRecordingApp(res, nil)
	return s, c
}

func newRecordingApp(res *fakeResolver, trusted []netip.Prefix) (*server.Server, *Cache, *visits) {
	cache := NewCache(100, res)
	rec := &visits{}
	h := NewHandler(cache, rec, clientip.NewResolver(trusted))
	h.now = func(*fiber.Ctx) time.Time { return now }
	s := server.New(server.Options{Name: "gw", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TracerProvider: noop.NewTracerProvider()})
	s.App().Get("/:code", h.Serve)
	return s, cache, rec
}

// Only a GET answered 302 is a visit; HEAD and every 4xx are not. The visit carries the
// link, its owner, the client address per the trusted-proxy rules, the User-Agent, the
// Referer and, from a trusted proxy only, CF-IPCountry.
func TestOnlyRedirectedGetsAreRecorded(t *testing.T) {
	res := &fakeResolver{links: map[string]link.Resolved{
		"live":     {ID: "L1", OwnerID: "O1", ShortCode: "live", DestinationURL: "https://example.com", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour)},
		"expired":  {ID: "L2", ShortCode: "expired", DestinationURL: "https://example.com", Status: link.StatusActive, ExpiresAt: now},
		"disabled": {ID: "L3", ShortCode: "disabled", DestinationURL: "https://example.com", Status: link.StatusDisabled, ExpiresAt: now.Add(time.Hour)},
	}}
	s, _, rec := newRecordingApp(res, []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")})
	for _, r := range []struct{ method, path string }{{"GET", "/live"}, {"HEAD", "/live"}, {"GET", "/expired"}, {"GET", "/disabled"}, {"GET", "/unknown"}} {
		req := httptest.NewRequest(r.method, r.path, nil)
		req.Header.Set("User-Agent", "Mozilla/5.0 Firefox/120.0")
		req.Header.Set("Referer", "https://ref.example/p?t=1")
		req.Header.Set("X-Forwarded-For", "203.0.113.7")
		req.Header.Set("CF-IPCountry", "FR")
		if _, err := s.App().Test(req, -1); err != nil {
			t.Fatal(err)
		}
	}
	if len(rec.list) != 1 {
		t.Fatalf("%d visits recorded, want 1 (the GET of /live)", len(rec.list))
	}
	v := rec.list[0]
	if v.LinkID != "L1" || v.OwnerID != "O1" || v.Code != "live" || !v.At.Equal(now) || v.IP != netip.MustParseAddr("203.0.113.7") ||
		v.UserAgent != "Mozilla/5.0 Firefox/120.0" || v.Referer != "https://ref.example/p?t=1" || v.EdgeCountry != "FR" {
		t.Fatalf("visit %+v", v)
	}
	// From an untrusted peer, neither X-Forwarded-For nor CF-IPCountry is believed.
	s, _, rec = newRecordingApp(res, nil)
	req := httptest.NewRequest("GET", "/live", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.7")
	req.Header.Set("CF-IPCountry", "FR")
	if _, err := s.App().Test(req, -1); err != nil {
		t.Fatal(err)
	}
	if len(rec.list) != 1 || rec.list[0].EdgeCountry != "" || rec.list[0].IP == netip.MustParseAddr("203.0.113.7") {
		t.Fatalf("untrusted visit %+v", rec.list)
	}
}

func TestRedirectStatuses(t *testing.T) {
	res := &fakeResolver{links: map[string]link.Resolved{
		"live":     {DestinationURL: "https://example.com/a?b=c", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour)},
		"expired":  {DestinationURL: "https://example.com", Status: link.StatusActive, ExpiresAt: now},
		"disabled": {DestinationURL: "https://example.com", Status: link.StatusDisabled, ExpiresAt: now.Add(time.Hour)},
		"renewing": {DestinationURL: "https://example.com/r", Status: link.StatusActive, ExpiresAt: now.Add(-time.Hour), AutoRenew: true},
	}}
	s, _ := newTestApp(res)
	cases := []struct {
		method, path string
		status       int
		location     string
		msg          string
	}{
		{"GET", "/live", 302, "https://example.com/a?b=c", ""},
		{"HEAD", "/live", 302, "https://example.com/a?b=c", ""},
		{"GET", "/expired", 410, "", "short link has expired"},
		{"GET", "/disabled", 403, "", "short link has been disabled"},
		{"GET", "/renewing", 302, "https://example.com/r", ""},
		{"GET", "/unknown", 404, "", "short link not found"},
		{"GET", "/" + strings.Repeat("a", 33), 404, "", "short link not found"},
		{"GET", "/bad.code", 404, "", "short link not found"},
		{"GET", "/%00", 404, "", "short link not found"},
	}
	for _, tc := range cases {
		resp, err := s.App().Test(httptest.NewRequest(tc.method, tc.path, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.location {
			t.Errorf("%s %s: %d %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Location"))
		}
		if resp.Header.Get("Cache-Control") != "private, no-store" {
			t.Errorf("%s %s: Cache-Control %q", tc.method, tc.path, resp.Header.Get("Cache-Control"))
		}
		if tc.msg != "" && tc.method == "GET" {
			var env map[string]string
			if json.Unmarshal(body, &env) != nil || env["error"] != tc.msg || len(env) != 1 {
				t.Errorf("%s: body %s", tc.path, body)
			}
		}
	}
	if n := res.calls.Load(); n != 5 {
		t.Errorf("implausible codes must not reach the link service; resolver calls = %d, want 5", n)
	}
}

func TestCacheServesHitsAndNegativeEntries(t *testing.T) {
	res := &fakeResolver{links: map[string]link.Resolved{"live": {DestinationURL: "https://e.com", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour)}}}
	c := NewCache(10, res)
	ctx := context.Background()
	for range 3 {
		if e, err := c.Lookup(ctx, "live", now); err != nil || !e.Found {
			t.Fatal(e, err)
		}
		if e, err := c.Lookup(ctx, "nope", now); err != nil || e.Found {
			t.Fatal(e, err)
		}
	}
	if n := res.calls.Load(); n != 2 {
		t.Fatalf("resolver calls = %d, want 2 (one per code)", n)
	}
	c.Forget("live")
	_, _ = c.Lookup(ctx, "live", now)
	if n := res.calls.Load(); n != 3 {
		t.Fatalf("Forget did not drop the entry: calls = %d", n)
	}
	// Every copy expires by itself: an entry nobody visited is fetched again, synchronously,
	// link.CacheTTL after its fill.
	_, _ = c.Lookup(ctx, "live", now.Add(link.CacheTTL+time.Second))
	if n := res.calls.Load(); n != 4 {
		t.Fatalf("entry older than link.CacheTTL served from cache: calls = %d", n)
	}
}

// A hot code never waits on its own refresh: a hit past the entry's refresh point is
// answered from the entry at once while exactly one fill replaces it in the background,
// and the entry is refreshed before link.CacheTTL runs out.
func TestHotEntriesRefreshAhead(t *testing.T) {
	res := &fakeResolver{links: map[string]link.Resolved{"hot": {DestinationURL: "https://old.example", ExpiresAt: now.Add(time.Hour)}}}
	c := NewCache(10, res)
	ctx := context.Background()
	if _, err := c.Lookup(ctx, "hot", now); err != nil {
		t.Fatal(err)
	}
	if n := res.calls.Load(); n != 1 {
		t.Fatalf("calls = %d", n)
	}
	// Before the refresh window nothing is asked.
	if _, err := c.Lookup(ctx, "hot", now.Add(refreshFrom-time.Millisecond)); err != nil || res.calls.Load() != 1 {
		t.Fatalf("asked before the refresh window: calls %d, %v", res.calls.Load(), err)
	}
	res.mu.Lock()
	res.links["hot"] = link.Resolved{DestinationURL: "https://new.example", ExpiresAt: now.Add(time.Hour)}
	gate := make(chan struct{})
	res.gate = gate
	res.mu.Unlock()
	late := now.Add(refreshTo)
	// The refresh is held until every hit has been answered: a hit that waited for it
	// would never return.
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			e, err := c.Lookup(ctx, "hot", late)
			if err != nil || e.DestinationURL != "https://old.example" {
				t.Errorf("hit during refresh = %+v, %v; want the cached entry", e.Resolved, err)
			}
		})
	}
	answered := make(chan struct{})
	go func() { wg.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("hits waited for the refresh of their own entry")
	}
	close(gate)
	deadline := time.Now().Add(5 * time.Second)
	for {
		e, _ := c.Lookup(ctx, "hot", late)
		if e.DestinationURL == "https://new.example" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background refresh never stored its answer")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := res.calls.Load(); n != 2 {
		t.Fatalf("resolver calls = %d, want 2 (one fill, one refresh)", n)
	}
	// The refreshed entry counts from the refresh: served until late + link.CacheTTL.
	if e, ok := c.entries.Peek("hot"); !ok || !e.fetched.Equal(late) {
		t.Fatalf("refreshed entry fetched at %v, want %v", e.fetched, late)
	}
	if e, err := c.Lookup(ctx, "hot", late.Add(link.CacheTTL-time.Second)); err != nil || e.DestinationURL != "https://new.example" {
		t.Fatalf("refreshed entry near its bound = %+v, %v", e.Resolved, err)
	}
}

// A refresh that fails leaves the entry in service, and the next one starts refreshRetry
// later, not on every hit.
func TestFailedRefreshIsRetriedLater(t *testing.T) {
	res := &fakeResolver{links: map[string]link.Resolved{"hot": {DestinationURL: "https://e.example", ExpiresAt: now.Add(time.Hour)}}}
	c := NewCache(10, res)
	ctx := context.Background()
	if _, err := c.Lookup(ctx, "hot", now); err != nil {
		t.Fatal(err)
	}
	res.mu.Lock()
	res.fail = errs.Unavailable("link service unavailable", nil)
	res.mu.Unlock()
	e, _ := c.entries.Peek("hot")
	due := e.refreshAt
	waitCalls := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for res.calls.Load() != want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // and no more than want
		if n := res.calls.Load(); n != want {
			t.Fatalf("resolver calls = %d, want %d", n, want)
		}
	}
	for i := range 10 {
		if e, err := c.Lookup(ctx, "hot", due.Add(time.Duration(i)*100*time.Millisecond)); err != nil || !e.Found {
			t.Fatalf("hit while refreshing fails = %+v, %v", e, err)
		}
	}
	waitCalls(2)
	if _, err := c.Lookup(ctx, "hot", due.Add(refreshRetry)); err != nil {
		t.Fatal(err)
	}
	waitCalls(3)
}

// Refresh points are spread over the window, so codes filled together do not all refresh
// together.
func TestRefreshPointsAreSpread(t *testing.T) {
	res := &fakeResolver{}
	c := NewCache(1000, res)
	seen := map[time.Duration]bool{}
	for i := range 200 {
		code := fmt.Sprintf("c%d", i)
		if _, err := c.Lookup(context.Background(), code, now); err != nil {
			t.Fatal(err)
		}
		e, _ := c.entries.Get(code)
		d := e.refreshAt.Sub(now)
		if d < refreshFrom || d >= refreshTo {
			t.Fatalf("refresh after %s, want within [%s, %s)", d, refreshFrom, refreshTo)
		}
		seen[d.Truncate(time.Second)] = true
	}
	if len(seen) < 5 {
		t.Fatalf("200 refresh points fell into only %d distinct seconds", len(seen))
	}
}

// Invalidating one code leaves every other code's fill in flight alone: under steady
// creation traffic (each creation may broadcast one) cold codes must still get cached.
func TestInvalidationIsPerCode(t *testing.T) {
	res := &fakeResolver{delay: 100 * time.Millisecond, links: map[string]link.Resolved{"cold": {DestinationURL: "https://e.com", ExpiresAt: now.Add(time.Hour)}}}
	c := NewCache(10, res)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.Lookup(context.Background(), "cold", now)
	}()
	time.Sleep(30 * time.Millisecond)
	for i := range 50 {
		c.Forget(fmt.Sprintf("other%d", i))
	}
	<-done
	if _, ok := c.entries.Get("cold"); !ok {
		t.Fatal("invalidating other codes discarded this code's fill")
	}
}

// A fill that was in flight when the link changed must not put the old answer back.
func TestInvalidationDuringFill(t *testing.T) {
	res := &fakeResolver{delay: 100 * time.Millisecond, links: map[string]link.Resolved{"chg": {DestinationURL: "https://old.example", ExpiresAt: now.Add(time.Hour)}}}
	c := NewCache(10, res)
	done := make(chan *Entry)
	go func() { e, _ := c.Lookup(context.Background(), "chg", now); done <- e }()
	time.Sleep(30 * time.Millisecond) // the fill has read the old state
	res.mu.Lock()
	res.links["chg"] = link.Resolved{DestinationURL: "https://new.example", ExpiresAt: now.Add(time.Hour)}
	res.mu.Unlock()
	c.Forget("chg")
	if e, _ := c.Lookup(context.Background(), "chg", now); e.DestinationURL != "https://new.example" {
		t.Fatalf("a visit after the change joined the stale fill: %q", e.DestinationURL)
	}
	<-done
	if e, _ := c.Lookup(context.Background(), "chg", now); e.DestinationURL != "https://new.example" {
		t.Fatalf("the stale fill stored its answer: %q", e.DestinationURL)
	}
}

func TestFailuresAreNotCached(t *testing.T) {
	res := &fakeResolver{fail: errs.Unavailable("link service unavailable", nil)}
	c := NewCache(10, res)
	if _, err := c.Lookup(context.Background(), "x", now); !errs.IsKind(err, errs.KindUnavailable) {
		t.Fatalf("got %v", err)
	}
	res.fail = nil
	if e, err := c.Lookup(context.Background(), "x", now); err != nil || e.Found {
		t.Fatalf("after recovery got %v %v", e, err)
	}
	if c.Len() != 1 {
		t.Fatalf("cache has %d entries, want 1", c.Len())
	}
}

func TestConcurrentMissesFillOnce(t *testing.T) {
	res := &fakeResolver{delay: 50 * time.Millisecond, links: map[string]link.Resolved{"hot": {DestinationURL: "https://e.com", ExpiresAt: now.Add(time.Hour)}}}
	c := NewCache(10, res)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if e, err := c.Lookup(context.Background(), "hot", now); err != nil || !e.Found {
				t.Error(e, err)
			}
		}()
	}
	wg.Wait()
	if n := res.calls.Load(); n != 1 {
		t.Fatalf("resolver calls = %d, want 1", n)
	}
}

func TestCacheIsBounded(t *testing.T) {
	res := &fakeResolver{}
	c := NewCache(5, res)
	for i := range 50 {
		_, _ = c.Lookup(context.Background(), strings.Repeat("a", i+1), now)
	}
	if c.Len() != 5 {
		t.Fatalf("cache holds %d entries, want 5", c.Len())
	}
}

// While the link service cannot be reached, an expired entry keeps answering for StaleFor,
// with fills retried in the background; an invalidated code is never served stale, and the
// first good fill ends the stale answers.
func TestStaleEntriesAnswerWhileTheLinkServiceIsAway(t *testing.T) {
	res := &fakeResolver{links: map[string]link.Resolved{
		"warm": {DestinationURL: "https://e.example/w", ExpiresAt: now.Add(24 * time.Hour)},
		"gone": {DestinationURL: "https://e.example/g", ExpiresAt: now.Add(24 * time.Hour)},
	}}
	c := NewCache(10, res)
	ctx := context.Background()
	for _, code := range []string{"warm", "gone"} {
		if _, err := c.Lookup(ctx, code, now); err != nil {
			t.Fatal(err)
		}
	}
	res.mu.Lock()
	res.fail = errs.Unavailable("link service unavailable", nil)
	res.mu.Unlock()
	c.Forget("gone") // a change the link service announced before it went away

	later := now.Add(link.CacheTTL + time.Second)
	if e, err := c.Lookup(ctx, "warm", later); err != nil || !e.Found || e.DestinationURL != "https://e.example/w" {
		t.Fatalf("expired entry during the outage: %+v, %v", e, err)
	}
	if _, err := c.Lookup(ctx, "gone", later); !errs.IsKind(err, errs.KindUnavailable) {
		t.Fatalf("an invalidated code was answered during the outage: %v", err)
	}
	calls := res.calls.Load()
	for i := range 50 { // answered at once, without a fill each
		if e, err := c.Lookup(ctx, "warm", later.Add(time.Duration(i)*time.Millisecond)); err != nil || !e.Found {
			t.Fatalf("stale hit %d: %+v, %v", i, e, err)
		}
	}
	if n := res.calls.Load() - calls; n != 0 {
		t.Fatalf("stale hits within the retry interval asked the link service %d times", n)
	}
	if e, err := c.Lookup(ctx, "warm", now.Add(link.CacheTTL+StaleFor-time.Second)); err != nil || !e.Found {
		t.Fatalf("just inside the stale bound: %+v, %v", e, err)
	}
	if _, err := c.Lookup(ctx, "warm", now.Add(link.CacheTTL+StaleFor+time.Second)); !errs.IsKind(err, errs.KindUnavailable) {
		t.Fatalf("past the stale bound the entry still answered: %v", err)
	}
	if s := c.Stats(); s.Stale < 52 {
		t.Fatalf("stale answers counted %d, want ≥ 52", s.Stale)
	}

	// Back: the background retry stores a fresh entry, and stale answers stop.
	c2 := NewCache(10, res)
	res.mu.Lock()
	res.fail = nil
	res.mu.Unlock()
	if _, err := c2.Lookup(ctx, "warm", now); err != nil {
		t.Fatal(err)
	}
	res.mu.Lock()
	res.fail = errs.Unavailable("link service unavailable", nil)
	res.mu.Unlock()
	if _, err := c2.Lookup(ctx, "warm", later); err != nil {
		t.Fatal(err)
	}
	res.mu.Lock()
	res.fail = nil
	res.links["warm"] = link.Resolved{DestinationURL: "https://e.example/new", ExpiresAt: now.Add(24 * time.Hour)}
	res.mu.Unlock()
	retry := later.Add(refreshRetry)
	deadline := time.Now().Add(5 * time.Second)
	for {
		e, err := c2.Lookup(ctx, "warm", retry)
		if err != nil {
			t.Fatal(err)
		}
		if e.DestinationURL == "https://e.example/new" && !e.stale {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the entry was never refreshed once the link service was back: %+v", e)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Codes that went quiet together come due together: after a lull, the first hits start at
// most maxRefreshing background refreshes; the others stay due and start on later hits, and
// an entry near its bound starts its refresh whatever runs. Nothing waits on any of them.
func TestRefreshesAfterALullRunAFewAtATime(t *testing.T) {
	const codes = 50
	res := &fakeResolver{links: map[string]link.Resolved{}}
	for i := range codes {
		res.links[fmt.Sprint("c", i)] = link.Resolved{DestinationURL: "https://e.example", ExpiresAt: now.Add(time.Hour)}
	}
	c := NewCache(100, res)
	ctx := context.Background()
	for i := range codes {
		if _, err := c.Lookup(ctx, fmt.Sprint("c", i), now); err != nil {
			t.Fatal(err)
		}
	}
	gate := make(chan struct{})
	res.mu.Lock()
	res.gate = gate
	res.mu.Unlock()
	hitAll := func(at time.Time) {
		for i := range codes {
			if e, err := c.Lookup(ctx, fmt.Sprint("c", i), at); err != nil || !e.Found {
				t.Fatalf("hit at %v: %+v, %v", at.Sub(now), e, err)
			}
		}
	}
	refreshes := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for res.calls.Load()-codes < want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond) // and no more than want
		if got := res.calls.Load() - codes; got != want {
			t.Fatalf("%d refreshes started, want %d", got, want)
		}
	}
	hitAll(now.Add(refreshTo)) // every entry due, none near its bound
	refreshes(maxRefreshing)
	hitAll(now.Add(refreshTo + time.Second))
	refreshes(maxRefreshing)
	hitAll(now.Add(link.CacheTTL - refreshUrgent)) // near the bound: each starts its own
	refreshes(codes)
	close(gate)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n := c.refreshing.Load(); n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d refreshes still counted in flight", c.refreshing.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := range codes {
		if e, ok := c.entries.Peek(fmt.Sprint("c", i)); !ok || !e.fetched.After(now) {
			t.Fatalf("c%d not refreshed: %+v", i, e)
		}
	}
}

// Every visitor waiting on the fill of an expired entry that fails because the link
// service is away gets the stale entry, not only the first one.
func TestConcurrentMissesDuringAnOutageAllServedStale(t *testing.T) {
	res := &fakeResolver{links: map[string]link.Resolved{"hot": {DestinationURL: "https://e.example", ExpiresAt: now.Add(time.Hour)}}}
	c := NewCache(10, res)
	ctx := context.Background()
	if _, err := c.Lookup(ctx, "hot", now); err != nil {
		t.Fatal(err)
	}
	res.mu.Lock()
	res.fail, res.delay = errs.Unavailable("link service unavailable", nil), 100*time.Millisecond
	res.mu.Unlock()
	later := now.Add(link.CacheTTL + time.Second)
	var wg sync.WaitGroup
	failed := atomic.Int32{}
	for range 8 {
		wg.Go(func() {
			if e, err := c.Lookup(ctx, "hot", later); err != nil || !e.Found {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Fatalf("%d of 8 visitors of the failed fill got an error instead of the stale entry", n)
	}
}
