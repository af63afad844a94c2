package http

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/metrics"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clicks"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clientip"
	"github.com/linkmesh/linkmesh/services/gateway/internal/redirect"
	"github.com/linkmesh/linkmesh/services/gateway/internal/session"
	"github.com/linkmesh/linkmesh/services/gateway/internal/webapp"
)

// benchLinks is how many codes the redirect benchmarks visit in turn.
const benchLinks = 1000

// BenchmarkRedirect compares a warm cache hit through the gateway as it serves (the server
// factory with Prometheus metrics, every public route registered, the click recorder's
// spool) with a bare Fiber handler answering 302 from a map. `make bench` runs it next to
// the benchmark of the whole system: its allocations per request show what the gateway adds
// to the bare handler's (the goal is nothing).
//
// "recorded" visits carry a browser's User-Agent and are spooled as clicks; "unrecorded"
// ones carry none and are no click. The recorder's background work (enrichment, the
// stream) is BenchmarkRecorder's, in the clicks package.
func BenchmarkRedirect(b *testing.B) {
	paths, bare, cache := benchFixtures()
	for _, tc := range redirectCases {
		b.Run(tc.name, func(b *testing.B) {
			h, rec := bare.Handler(), (*clicks.Recorder)(nil)
			if tc.gateway {
				h, rec = benchGateway(b, cache, b.N+len(paths))
			}
			d := &redirectDriver{h: h, paths: paths, userAgent: tc.userAgent}
			for i := range paths { // warm
				d.serve(b, i)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				d.serve(b, i)
			}
			b.StopTimer()
			if rec == nil {
				return
			}
			want := int64(0)
			if tc.userAgent != "" {
				want = int64(b.N + len(paths)) // every visit spooled, none dropped
			}
			if got := rec.Accepted(); got != want || rec.Dropped() != 0 {
				b.Fatalf("recorder took %d visits and dropped %d, want %d and 0", got, rec.Dropped(), want)
			}
		})
	}
}

// redirectCases are the handlers the redirect benchmark and its allocation test compare.
var redirectCases = []struct {
	name      string
	userAgent string
	gateway   bool
}{
	{"bare", "", false},
	{"gateway/unrecorded", "", true},
	{"gateway/recorded", "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0", true},
}

// redirectDriver sends the codes' paths to a handler in turn, as a server would with one
// connection's requests, and insists on a 302 each time.
type redirectDriver struct {
	h         fasthttp.RequestHandler
	paths     []string
	userAgent string
	ctx       fasthttp.RequestCtx
}

func (d *redirectDriver) serve(t testing.TB, i int) {
	d.ctx.Request.Reset()
	d.ctx.Response.Reset()
	d.ctx.Request.SetRequestURI(d.paths[i%len(d.paths)])
	if d.userAgent != "" {
		d.ctx.Request.Header.SetUserAgent(d.userAgent)
	}
	d.h(&d.ctx)
	if d.ctx.Response.StatusCode() != fiber.StatusFound {
		t.Fatalf("status %d: %s", d.ctx.Response.StatusCode(), d.ctx.Response.Body())
	}
}

// The redirect allocates nothing the bare handler does not, with every visit recorded and
// with none (counted, not timed: it holds on any machine).
func TestRedirectAllocatesNoMoreThanABareHandler(t *testing.T) {
	paths, bare, cache := benchFixtures()
	allocs := map[string]float64{}
	for _, tc := range redirectCases {
		h := bare.Handler()
		if tc.gateway {
			h, _ = benchGateway(t, cache, 1<<16)
		}
		d := &redirectDriver{h: h, paths: paths, userAgent: tc.userAgent}
		for i := range paths {
			d.serve(t, i)
		}
		i := 0
		allocs[tc.name] = testing.AllocsPerRun(5000, func() { d.serve(t, i); i++ })
	}
	for name, n := range allocs {
		if n > allocs["bare"] {
			t.Errorf("%s allocates %.2f times a request, the bare handler %.2f", name, n, allocs["bare"])
		}
	}
}

// benchFixtures are the codes' paths, the bare handler answering them, and a cache that
// resolves them.
func benchFixtures() ([]string, *fiber.App, *redirect.Cache) {
	links := benchResolver{}
	dest := map[string]string{}
	paths := make([]string, benchLinks)
	for i := range benchLinks {
		code := "bench" + strconv.Itoa(i)
		links[code] = link.Resolved{ID: "id-" + code, OwnerID: "owner", ShortCode: code,
			DestinationURL: "https://example.com/" + code, Status: link.StatusActive, ExpiresAt: time.Now().Add(time.Hour)}
		dest[code] = links[code].DestinationURL
		paths[i] = "/" + code
	}
	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	bare.Get("/:code", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderLocation, dest[c.Params("code")])
		return c.SendStatus(fiber.StatusFound)
	})
	return paths, bare, redirect.NewCache(10*benchLinks, links)
}

// benchGateway is the gateway's handler as it serves, with a recorder whose spool holds
// visits visits: its background stage never runs, so nothing leaves it.
func benchGateway(b testing.TB, cache *redirect.Cache, visits int) (fasthttp.RequestHandler, *clicks.Recorder) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := server.New(server.Options{Name: "gateway", Logger: log, TracerProvider: noop.NewTracerProvider(),
		Metrics: metrics.New("gateway").HTTP()})
	srv.PublicEdge()
	enricher, err := clicks.NewEnricher(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	// The producer is never run: its client is never dialled.
	producer, err := stream.NewProducer(stream.ProducerOptions{Client: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Stream: "clicks", Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	rec, err := clicks.NewRecorder(clicks.RecorderOptions{QueueSize: visits, SpoolSize: max(1<<20, visits*256),
		Enricher: enricher, Producer: producer, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	ips := clientip.NewResolver(nil)
	web, err := webapp.New(webapp.Config{})
	if err != nil {
		b.Fatal(err)
	}
	Register(srv.App(), Deps{
		Web:      web,
		Gate:     session.NewGate(nil, testenv.Keys(b, identity.Gateway), ips, clientip.NewKeyer(testSecret), false),
		BaseURL:  "http://localhost:8080",
		Redirect: redirect.NewHandler(cache, rec, ips),
		Health:   map[string]Probe{},
		Logger:   log,
	})
	return srv.App().Handler(), rec
}

// benchResolver answers the benchmark's codes; it is asked once per code, to warm the cache.
type benchResolver map[string]link.Resolved

func (r benchResolver) Resolve(_ context.Context, code string) (link.Resolved, error) {
	return r[code], nil
}
