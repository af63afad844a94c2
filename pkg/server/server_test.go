package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/metrics"
)

func newTestServer(ready map[string]Check) *Server {
	s := New(Options{Name: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		TracerProvider: noop.NewTracerProvider(), Dependencies: ready})
	s.App().Post("/echo", func(c *fiber.Ctx) error { return c.Send(c.Body()) })
	s.App().Get("/panic", func(*fiber.Ctx) error { panic("boom") })
	s.App().Get("/secret-failure", func(*fiber.Ctx) error { return errors.New("db password is hunter2") })
	return s
}

func do(t *testing.T, s *Server, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := s.App().Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func envelope(t *testing.T, body string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil || len(m) != 1 {
		t.Fatalf("not a one-field envelope: %q", body)
	}
	msg, ok := m["error"].(string)
	if !ok || msg == "" {
		t.Fatalf("no error message: %q", body)
	}
	return msg
}

// The 413 message names the limit the server enforces.
func TestBodyLimitMessageNamesTheLimit(t *testing.T) {
	if want := fmt.Sprintf("request body exceeds %d KiB", BodyLimit/1024); errs.MsgBodyTooLarge != want {
		t.Fatalf("message %q, limit says %q", errs.MsgBodyTooLarge, want)
	}
}

// A dependency failure that reaches the error handler as a plain error is classified once,
// there: a recognised outage is a 503 with its message, anything else stays a 500, and a
// deliberate kind is never reclassified.
func TestClassifiedFailures(t *testing.T) {
	outage := errors.New("dial tcp: connection refused")
	s := New(Options{Name: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TracerProvider: noop.NewTracerProvider(),
		Classify: []errs.Classifier{func(err error) *errs.Error {
			if errors.Is(err, outage) {
				return errs.Unavailable("store unavailable", err)
			}
			return nil
		}}})
	s.App().Get("/wrapped", func(*fiber.Ctx) error { return fmt.Errorf("insert link: %w", outage) })
	s.App().Get("/internal-kind", func(*fiber.Ctx) error { return &errs.Error{Kind: errs.KindInternal, Message: "x", Err: outage} })
	s.App().Get("/deliberate", func(*fiber.Ctx) error { return &errs.Error{Kind: errs.KindConflict, Message: "taken", Err: outage} })
	s.App().Get("/other", func(*fiber.Ctx) error { return errors.New("decode: bad document") })
	for path, want := range map[string]struct {
		status int
		msg    string
	}{
		"/wrapped": {503, "store unavailable"}, "/internal-kind": {503, "store unavailable"},
		"/deliberate": {409, "taken"}, "/other": {500, "internal server error"},
	} {
		resp, body := do(t, s, httptest.NewRequest("GET", path, nil))
		if resp.StatusCode != want.status || envelope(t, body) != want.msg {
			t.Errorf("%s: got %d %s, want %d %q", path, resp.StatusCode, body, want.status, want.msg)
		}
	}
}

func TestFailuresUseTheEnvelope(t *testing.T) {
	s := newTestServer(nil)
	cases := []struct {
		req    *http.Request
		status int
		msg    string
	}{
		{httptest.NewRequest("GET", "/nope", nil), 404, "route not found"},
		{httptest.NewRequest("DELETE", "/echo", nil), 405, "method not allowed"},
		{httptest.NewRequest("GET", "/panic", nil), 500, "internal server error"},
		{httptest.NewRequest("GET", "/secret-failure", nil), 500, "internal server error"},
	}
	for _, tc := range cases {
		resp, body := do(t, s, tc.req)
		if resp.StatusCode != tc.status || envelope(t, body) != tc.msg {
			t.Errorf("%s %s: got %d %s", tc.req.Method, tc.req.URL, resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("content type %q", ct)
		}
	}
}

// The body limit is enforced by fasthttp while reading, so it needs a real listener.
func TestBodyLimit(t *testing.T) {
	s := newTestServer(nil)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, ln, 0) }()
	defer func() { cancel(); <-done }()

	url := "http://" + ln.Addr().String() + "/echo"
	resp, b := oversized(t, ln.Addr().String(), "/echo")
	if resp.StatusCode != 413 || envelope(t, b) != "request body exceeds 64 KiB" || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("got %d %s %v", resp.StatusCode, b, resp.Header)
	}
	resp, err := http.Post(url, "application/json", strings.NewReader(strings.Repeat("a", BodyLimit)))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("a body of exactly the limit must pass: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestRequestID(t *testing.T) {
	s := newTestServer(nil)
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.Header.Set("X-Request-Id", "abc-123")
	if resp, _ := do(t, s, req); resp.Header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("sane id not echoed: %q", resp.Header.Get("X-Request-Id"))
	}
	seen := map[string]bool{}
	for _, bad := range []string{"", "has space", strings.Repeat("x", 129), "a\"b", "<script>"} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		if bad != "" {
			req.Header.Set("X-Request-Id", bad)
		}
		resp, _ := do(t, s, req)
		id := resp.Header.Get("X-Request-Id")
		if id == "" || id == bad || !saneRequestID(id) || seen[id] {
			t.Fatalf("for %q got id %q", bad, id)
		}
		seen[id] = true
	}
}

func TestReadiness(t *testing.T) {
	failing := errors.New("down")
	var depErr error
	s := newTestServer(map[string]Check{"redis": func(context.Context) error { return depErr }})
	resp, body := do(t, s, httptest.NewRequest("GET", "/readyz", nil))
	if resp.StatusCode != 200 || body != `{"dependencies":{"redis":"ok"},"status":"ok"}` {
		t.Fatalf("ready: %d %s", resp.StatusCode, body)
	}
	// A dependency away is reported, and the pod stays ready: its requests answer 503 one by
	// one (or are served from what it holds) rather than the Service losing the endpoint.
	depErr = failing
	resp, body = do(t, s, httptest.NewRequest("GET", "/readyz", nil))
	if resp.StatusCode != 200 || body != `{"dependencies":{"redis":"unavailable"},"status":"degraded"}` {
		t.Fatalf("dependency down: %d %s", resp.StatusCode, body)
	}
	// Only draining for shutdown decides (TestShutdownFailsReadinessFirst).
	if resp, _ := do(t, s, httptest.NewRequest("GET", "/healthz", nil)); resp.StatusCode != 200 {
		t.Fatalf("liveness must not depend on dependencies: %d", resp.StatusCode)
	}
}

// oversized announces a body one byte over the limit and reads the answer without sending
// it all: the server answers from the headers and may close before a client finishes writing.
func oversized(t *testing.T, addr, path string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\naaaa", path, BodyLimit+1)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// Shutdown must fail readiness while draining, before the listener closes.
func TestShutdownFailsReadinessFirst(t *testing.T) {
	s := newTestServer(nil)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, ln, 300*time.Millisecond) }()
	url := "http://" + ln.Addr().String() + "/readyz"
	waitStatus(t, url, 200)
	cancel()
	waitStatus(t, url, 503)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("listener still open after shutdown")
	}
}

func waitStatus(t *testing.T, url string, want int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never answered %d", url, want)
}

func TestTracingAddsTraceparent(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	s := New(Options{Name: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		TracerProvider: trace.NewTracerProvider(trace.WithSpanProcessor(rec))})
	s.App().Get("/x/:code", func(c *fiber.Ctx) error { return errs.NotFound("gone") })
	s.App().Get("/boom", func(c *fiber.Ctx) error { return errors.New("broken") })
	req := httptest.NewRequest("GET", "/x/abc?token=secret", nil)
	req.Header.Set("User-Agent", "Visitor/1.0")
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("X-Forwarded-Proto", "203.0.113.9") // the scheme is the connection's, never a header's
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, body := do(t, s, req)
	tp := resp.Header.Get("traceparent")
	spans := rec.Ended()
	if len(spans) != 1 || !strings.Contains(tp, spans[0].SpanContext().TraceID().String()) {
		t.Fatalf("traceparent %q, spans %d", tp, len(spans))
	}
	sp := spans[0]
	if resp.StatusCode != 404 || !strings.Contains(string(body), "gone") {
		t.Fatalf("answer %d %s", resp.StatusCode, body)
	}
	if sp.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sp.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("the span does not continue the caller's trace: %s, parent %s", sp.SpanContext().TraceID(), sp.Parent().SpanID())
	}
	attrs := map[string]string{}
	for _, a := range sp.Attributes() {
		attrs[string(a.Key)] = a.Value.String()
	}
	want := map[string]string{"http.request.method": "GET", "http.route": "/x/:code", "url.path": "/x/abc", "http.response.status_code": "404", "url.scheme": "http"}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("attribute %s = %q, want %q (all: %v)", k, attrs[k], v, attrs)
		}
	}
	if sp.Name() != "GET /x/:code" || sp.SpanKind().String() != "server" || sp.Status().Code != codes.Unset {
		t.Errorf("span %q kind %s status %v", sp.Name(), sp.SpanKind(), sp.Status())
	}
	// Nothing about the visitor leaves in a trace.
	for k, v := range attrs {
		if strings.Contains(v, "203.0.113.9") || strings.Contains(v, "Visitor/1.0") || strings.Contains(v, "secret") || strings.HasPrefix(k, "client.") || strings.HasPrefix(k, "user_agent.") {
			t.Errorf("the span carries %s=%q", k, v)
		}
	}

	// A failure the handler does not classify is a 500 and an error span.
	resp, _ = do(t, s, httptest.NewRequest("GET", "/boom", nil))
	spans = rec.Ended()
	if resp.StatusCode != 500 || len(spans) != 2 || spans[1].Status().Code != codes.Error || len(spans[1].Events()) == 0 {
		t.Fatalf("failure: %d, %d spans, status %v, events %d", resp.StatusCode, len(spans), spans[len(spans)-1].Status(), len(spans[len(spans)-1].Events()))
	}

	// A panic is a 500 and an error span named after its route, and the answer names the trace.
	s.App().Get("/panic", func(c *fiber.Ctx) error { panic("boom") })
	resp, _ = do(t, s, httptest.NewRequest("GET", "/panic", nil))
	spans = rec.Ended()
	if last := spans[len(spans)-1]; resp.StatusCode != 500 || resp.Header.Get("traceparent") == "" || last.Name() != "GET /panic" || last.Status().Code != codes.Error {
		t.Fatalf("panic: %d, traceparent %q, span %q %v", resp.StatusCode, resp.Header.Get("traceparent"), last.Name(), last.Status())
	}

	// A path no route matches is named as the metrics label it, never after the raw path.
	_, _ = do(t, s, httptest.NewRequest("GET", "/no/such/path", nil))
	spans = rec.Ended()
	if last := spans[len(spans)-1]; last.Name() != "GET "+metrics.Unmatched {
		t.Fatalf("unmatched path: span %q", last.Name())
	}

	// At the public edge a client's trace is linked, not continued: its sampled flag cannot
	// have the request traced against the sampler.
	edge := New(Options{Name: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		TracerProvider: trace.NewTracerProvider(trace.WithSpanProcessor(rec), trace.WithSampler(trace.ParentBased(trace.NeverSample())))})
	edge.PublicEdge()
	edge.App().Get("/x/:code", func(c *fiber.Ctx) error { return c.SendString("ok") })
	req = httptest.NewRequest("GET", "/x/abc", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	resp, _ = do(t, edge, req)
	if got := resp.Header.Get("traceparent"); resp.StatusCode != 200 || got == "" || strings.Contains(got, "4bf92f3577b34da6a3ce929d0e0e4736") || len(rec.Ended()) != 4 {
		t.Fatalf("edge: %d, traceparent %q, %d spans ended; want a trace of its own, unsampled", resp.StatusCode, got, len(rec.Ended()))
	}
	always := New(Options{Name: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		TracerProvider: trace.NewTracerProvider(trace.WithSpanProcessor(rec))})
	always.PublicEdge()
	always.App().Get("/x/:code", func(c *fiber.Ctx) error { return c.SendString("ok") })
	_, _ = do(t, always, req)
	if spans := rec.Ended(); len(spans) != 5 || spans[4].Parent().IsValid() || len(spans[4].Links()) != 1 ||
		spans[4].Links()[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("edge span: parent %v, links %v", spans[len(spans)-1].Parent(), spans[len(spans)-1].Links())
	}

	// A span the sampler drops records nothing, and the answer still names the trace.
	req = httptest.NewRequest("GET", "/x/abc", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	dropped := New(Options{Name: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		TracerProvider: trace.NewTracerProvider(trace.WithSpanProcessor(rec), trace.WithSampler(trace.ParentBased(trace.AlwaysSample())))})
	dropped.App().Get("/x/:code", func(c *fiber.Ctx) error { return c.SendString("ok") })
	resp, _ = do(t, dropped, req)
	if got := resp.Header.Get("traceparent"); resp.StatusCode != 200 || !strings.HasPrefix(got, "00-4bf92f3577b34da6a3ce929d0e0e4736-") || !strings.HasSuffix(got, "-00") || len(rec.Ended()) != 5 {
		t.Fatalf("unsampled: %d, traceparent %q, %d spans ended", resp.StatusCode, got, len(rec.Ended()))
	}
}

// Compressed bodies are refused rather than inflated without bound; unknown methods and
// failures raised before the middleware still answer the envelope with a request id.
func TestEdgeFailures(t *testing.T) {
	s := newTestServer(nil)
	s.App().Post("/json", func(c *fiber.Ctx) error {
		var v map[string]any
		if err := DecodeJSON(c, &v); err != nil {
			return err
		}
		return c.JSON(v)
	})
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, ln, 0) }()
	defer func() { cancel(); <-done }()
	base := "http://" + ln.Addr().String()

	send := func(method, path, encoding, body string) (*http.Response, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if encoding != "" {
			req.Header.Set("Content-Encoding", encoding)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := send("POST", "/json", "gzip", "\x1f\x8b\x08\x00")
	if resp.StatusCode != 415 || envelope(t, body) != "Content-Encoding gzip is not supported" {
		t.Fatalf("gzip body: %d %s", resp.StatusCode, body)
	}
	if resp, body := send("POST", "/json", "", `{"a":1}`); resp.StatusCode != 200 || body != `{"a":1}` {
		t.Fatalf("plain body: %d %s", resp.StatusCode, body)
	}
	resp, body = send("PROPFIND", "/json", "", "")
	if resp.StatusCode != 405 || envelope(t, body) != "method not allowed" || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("unknown method: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	if resp, _ := oversized(t, ln.Addr().String(), "/json"); resp.StatusCode != 413 || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("413 without request id: %d %v", resp.StatusCode, resp.Header)
	}
}

// An internal request's work is bounded by how long its caller waits (TimeoutHeader), at most
// MaxInternalRequest; a public route's never reads the header.
func TestInternalRequestDeadline(t *testing.T) {
	s := newTestServer(nil)
	left := func(c *fiber.Ctx) error {
		dl, ok := c.UserContext().Deadline()
		if !ok {
			return c.SendString("none")
		}
		return c.SendString(strconv.FormatInt(time.Until(dl).Milliseconds(), 10))
	}
	s.App().Get("/internal/x", left)
	s.App().Get("/public", left)
	for _, tc := range []struct {
		path, header string
		min, max     int64 // milliseconds left; -1: no deadline
	}{
		{"/internal/x", "250", 150, 250},
		{"/internal/x", "", MaxInternalRequest.Milliseconds() - 1000, MaxInternalRequest.Milliseconds()},
		{"/internal/x", "999999999", MaxInternalRequest.Milliseconds() - 1000, MaxInternalRequest.Milliseconds()},
		{"/internal/x", "-5", MaxInternalRequest.Milliseconds() - 1000, MaxInternalRequest.Milliseconds()},
		{"/internal/x", "soon", MaxInternalRequest.Milliseconds() - 1000, MaxInternalRequest.Milliseconds()},
		{"/public", "250", -1, -1},
	} {
		req := httptest.NewRequest("GET", tc.path, nil)
		if tc.header != "" {
			req.Header.Set(TimeoutHeader, tc.header)
		}
		_, body := do(t, s, req)
		if tc.min < 0 {
			if body != "none" {
				t.Errorf("%s with %q: deadline in %s ms", tc.path, tc.header, body)
			}
			continue
		}
		ms, err := strconv.ParseInt(body, 10, 64)
		if err != nil || ms < tc.min || ms > tc.max {
			t.Errorf("%s with %q: %s ms left, want %d..%d", tc.path, tc.header, body, tc.min, tc.max)
		}
	}
}

// The metrics middleware runs outside the tracing one, which restores the request's context
// before it returns: the exemplar of a traced request's duration still names its trace.
func TestDurationExemplarNamesTheTrace(t *testing.T) {
	for name, sampler := range map[string]trace.Sampler{"sampled": trace.AlwaysSample(), "unsampled": trace.NeverSample()} {
		t.Run(name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			reg := metrics.New("t")
			s := New(Options{Name: "t", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				TracerProvider: trace.NewTracerProvider(trace.WithSampler(sampler), trace.WithSpanProcessor(rec)), Metrics: reg.HTTP()})
			s.App().Get("/x/:code", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusFound) })
			if resp, _ := do(t, s, httptest.NewRequest("GET", "/x/abc", nil)); resp.StatusCode != fiber.StatusFound {
				t.Fatalf("answer %d", resp.StatusCode)
			}
			w := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/metrics", nil)
			req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
			reg.Handler(slog.New(slog.DiscardHandler)).ServeHTTP(w, req)
			body := w.Body.String()
			if !strings.Contains(body, `linkmesh_http_request_duration_seconds_bucket{method="GET",route="/x/:code"`) {
				t.Fatalf("the request's duration is not measured:\n%s", body)
			}
			spans := rec.Ended()
			if name == "unsampled" {
				if len(spans) != 0 || strings.Contains(body, "trace_id=") {
					t.Errorf("an unsampled request: %d spans recorded, an exemplar names a trace no backend keeps:\n%s", len(spans), body)
				}
				return
			}
			if len(spans) != 1 {
				t.Fatalf("%d spans", len(spans))
			}
			if want := `trace_id="` + spans[0].SpanContext().TraceID().String() + `"`; !strings.Contains(body, want) {
				t.Errorf("no exemplar %s in:\n%s", want, body)
			}
		})
	}
}
