package metrics

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	oteltrace "go.opentelemetry.io/otel/trace"
)

func TestMiddlewareLabelsByRouteTemplateAndAnsweredStatus(t *testing.T) {
	reg := New("svc")
	h := reg.HTTP()
	app := fiber.New(fiber.Config{ErrorHandler: func(c *fiber.Ctx, err error) error {
		code := fiber.StatusInternalServerError
		var fe *fiber.Error
		if errors.As(err, &fe) {
			code = fe.Code
		}
		return c.Status(code).JSON(fiber.Map{"error": err.Error()})
	}})
	app.Use(h.Middleware())
	app.Use(recover.New())
	app.Use(func(c *fiber.Ctx) error { return c.Next() }) // a later middleware, as identity checks are
	app.Get("/:code", func(c *fiber.Ctx) error { return c.Redirect("https://example.com/", fiber.StatusFound) })
	app.Get("/api/gone", func(c *fiber.Ctx) error { return fiber.NewError(fiber.StatusGone, "expired") })
	app.Get("/api/boom", func(c *fiber.Ctx) error { panic("boom") })

	for _, target := range []string{"/abc123", "/zzz999", "/api/gone", "/api/boom", "/no/such/path/secret-token", "/api/gone/extra"} {
		resp, err := app.Test(httptest.NewRequest("GET", target, nil))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := map[[3]string]float64{
		{"GET", "/:code", "302"}:    2,
		{"GET", "/api/gone", "410"}: 1,
		{"GET", "/api/boom", "500"}: 1,
		{"GET", Unmatched, "404"}:   2,
	}
	for k, n := range want {
		if got := testutil.ToFloat64(h.requests.WithLabelValues(k[0], k[1], k[2])); got != n {
			t.Errorf("requests%v = %v, want %v", k, got, n)
		}
	}
	if got := testutil.CollectAndCount(h.requests); got != len(want) {
		t.Errorf("%d request series, want %d (a raw path became a label?)", got, len(want))
	}
	if got := testutil.CollectAndCount(h.duration); got != 4 {
		t.Errorf("%d duration series, want 4", got)
	}
	if got := h.inflight.Load(); got != 0 {
		t.Errorf("in flight %v after every request was answered", got)
	}
	families, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
		for _, m := range f.GetMetric() {
			svc := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "service" {
					svc = l.GetValue()
				}
			}
			if svc != "svc" {
				t.Fatalf("%s has no service label", f.GetName())
			}
		}
	}
	all := strings.Join(names, " ")
	for _, n := range []string{"go_goroutines", "process_resident_memory_bytes", "linkmesh_http_requests_total", "linkmesh_http_request_duration_seconds", "linkmesh_http_requests_in_flight"} {
		if !strings.Contains(all, n) {
			t.Errorf("%s not exposed; have %s", n, all)
		}
	}
}

// On a real connection Fiber reuses its buffers between requests: a method kept as a label
// must not change under a later request ("GET" after "POST" read as "GETT").
func TestMethodLabelsSurviveBufferReuse(t *testing.T) {
	reg := New("svc")
	h := reg.HTTP()
	app := fiber.New()
	app.Use(h.Middleware())
	app.All("/x", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	defer app.Shutdown()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for _, m := range []string{"POST", "GET", "DELETE", "PUT", "GET", "PATCH"} {
		if _, err := fmt.Fprintf(conn, "%s /x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", m); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if _, err := reg.Gatherer().Gather(); err != nil {
		t.Fatalf("gathering failed: %v", err)
	}
	methods := collectLabels(t, h)
	sort.Strings(methods)
	if got := strings.Join(methods, ","); got != "DELETE,GET,PATCH,POST,PUT" {
		t.Fatalf("method labels %s", got)
	}
}

func collectLabels(t *testing.T, h *HTTP) []string {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	h.duration.Collect(ch)
	close(ch)
	var out []string
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == "method" {
				out = append(out, l.GetValue())
			}
		}
	}
	return out
}

// A traced (sampled) request leaves its trace id as the exemplar of its duration bucket,
// served in the OpenMetrics exposition; an untraced one leaves none.
func TestDurationExemplarsLinkToTraces(t *testing.T) {
	reg := New("svc")
	h := reg.HTTP()
	app := fiber.New()
	app.Use(h.Middleware())
	traceID := oteltrace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c}
	// As the tracing middleware does for a sampled span (whether a span is sampled is
	// pkg/server's TestDurationExemplarNamesTheTrace).
	app.Use(func(c *fiber.Ctx) error {
		err := c.Next()
		if c.Get("X-Traced") == "sampled" {
			c.Locals(TraceIDLocal, traceID.String())
		}
		return err
	})
	app.Get("/:code", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusFound) })
	for _, traced := range []string{"", "sampled"} {
		req := httptest.NewRequest("GET", "/abc", nil)
		req.Header.Set("X-Traced", traced)
		resp, err := app.Test(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	scrape := func(accept string) string {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Accept", accept)
		reg.Handler(slog.New(slog.DiscardHandler)).ServeHTTP(rec, req)
		return rec.Body.String()
	}
	om := scrape("application/openmetrics-text; version=1.0.0")
	want := `# {trace_id="` + traceID.String() + `"}`
	if n := strings.Count(om, want); n != 1 {
		t.Errorf("OpenMetrics: %d exemplars of the sampled trace, want 1:\n%s", n, om)
	}
	if strings.Count(om, "trace_id=") != 1 {
		t.Error("an untraced request left an exemplar")
	}
	if text := scrape("text/plain"); strings.Contains(text, "trace_id") {
		t.Error("exemplars in the text exposition")
	}
}
