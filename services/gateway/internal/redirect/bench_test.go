package redirect

import (
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clicks"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clientip"
)

// BenchmarkRedirect compares a warm cache hit through the gateway's server stack with a bare
// Fiber handler answering 302 from a map; `make bench` runs it next to the wrk comparison.
func BenchmarkRedirect(b *testing.B) {
	const n = 1000
	links := map[string]link.Resolved{}
	dest := map[string]string{}
	paths := make([]string, n)
	for i := range n {
		code := "c" + strconv.Itoa(i)
		links[code] = link.Resolved{ID: "id-" + code, DestinationURL: "https://example.com/" + code, Status: link.StatusActive, ExpiresAt: time.Now().Add(time.Hour)}
		dest[code] = links[code].DestinationURL
		paths[i] = "/" + code
	}
	bare := fiber.New(fiber.Config{DisableStartupMessage: true})
	bare.Get("/:code", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderLocation, dest[c.Params("code")])
		return c.SendStatus(fiber.StatusFound)
	})
	cache := NewCache(10*n, &fakeResolver{links: links})
	full := server.New(server.Options{Name: "gw", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TracerProvider: noop.NewTracerProvider()})
	// Clicks go into a queue a goroutine drains, as the real recorder's does.
	rec := chanRecorder(make(chan clicks.Visit, 1<<16))
	go func() {
		for range rec {
		}
	}()
	defer close(rec)
	full.App().Get("/:code", NewHandler(cache, rec, clientip.NewResolver(nil)).Serve)

	for _, tc := range []struct {
		name string
		h    fasthttp.RequestHandler
	}{{"bare", bare.Handler()}, {"gateway", full.App().Handler()}} {
		b.Run(tc.name, func(b *testing.B) {
			var ctx fasthttp.RequestCtx
			for _, p := range paths { // warm
				ctx.Request.SetRequestURI(p)
				tc.h(&ctx)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ctx.Request.Reset()
				ctx.Response.Reset()
				ctx.Request.SetRequestURI(paths[i%n])
				tc.h(&ctx)
				if ctx.Response.StatusCode() != fiber.StatusFound {
					b.Fatalf("status %d", ctx.Response.StatusCode())
				}
			}
		})
	}
}

// chanRecorder takes visits for the benchmark, which never reads them: the strings alias
// the request's buffers (see Recorder).
type chanRecorder chan clicks.Visit

func (c chanRecorder) Record(v clicks.Visit) {
	select {
	case c <- v:
	default:
	}
}
