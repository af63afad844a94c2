package telemetry

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

const badBytes = "\xff\xfe"

// collector is an OTLP/HTTP receiver keeping every span it is sent.
type collector struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			t.Errorf("collector got %s %s", r.Method, r.URL.Path)
			http.NotFound(w, r)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			body = gz
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			t.Error(err)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			t.Errorf("collector cannot decode the request: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.reqs = append(c.reqs, &req)
		c.mu.Unlock()
		resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	t.Cleanup(c.Close)
	return c
}

// received returns the spans and the string resource attributes the collector was sent.
func (c *collector) received() (spans []*tracepb.Span, res map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	res = map[string]string{}
	for _, req := range c.reqs {
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				res[kv.Key] = kv.Value.GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}
	return spans, res
}

// startBatch starts and ends one valid span and one carrying invalid UTF-8 in its name,
// an attribute, a string-slice attribute, an event and its status.
func startBatch(tp trace.TracerProvider) {
	tr := tp.Tracer("test")
	_, good := tr.Start(context.Background(), "good", trace.WithAttributes(attribute.String("http.route", "/ok")))
	good.End()
	_, bad := tr.Start(context.Background(), "GET /x"+badBytes, trace.WithAttributes(
		attribute.String("user_agent.original", "agent"+badBytes),
		attribute.StringSlice("http.request.header.x", []string{"ok", badBytes})))
	bad.AddEvent("ev"+badBytes, trace.WithAttributes(attribute.String("k", badBytes)))
	bad.SetStatus(codes.Error, "oops"+badBytes)
	bad.End()
}

// checkBatch asserts both spans arrived and every string of the bad one arrived as valid
// UTF-8 with U+FFFD where the invalid bytes were.
func checkBatch(t *testing.T, spans []*tracepb.Span) {
	t.Helper()
	if len(spans) != 2 {
		t.Fatalf("collector received %d spans, want 2", len(spans))
	}
	var bad *tracepb.Span
	for _, s := range spans {
		if s.Name != "good" {
			bad = s
		}
	}
	if bad == nil {
		t.Fatal("the span with invalid UTF-8 did not arrive")
	}
	replaced := func(what, s string) {
		t.Helper()
		if !utf8.ValidString(s) || !strings.Contains(s, "\uFFFD") {
			t.Errorf("%s arrived as %q, want valid UTF-8 with U+FFFD", what, s)
		}
	}
	replaced("name", bad.Name)
	if bad.Name != "GET /x\uFFFD" { // a run of invalid bytes becomes one U+FFFD
		t.Errorf("name arrived as %q", bad.Name)
	}
	replaced("status", bad.Status.GetMessage())
	attrs := map[string]string{}
	for _, kv := range bad.Attributes {
		v := kv.Value.GetStringValue()
		for _, e := range kv.Value.GetArrayValue().GetValues() {
			v += e.GetStringValue()
		}
		attrs[kv.Key] = v
	}
	replaced("attribute", attrs["user_agent.original"])
	replaced("string-slice attribute", attrs["http.request.header.x"])
	if len(bad.Events) != 1 || len(bad.Events[0].Attributes) != 1 {
		t.Fatalf("events arrived as %v", bad.Events)
	}
	replaced("event name", bad.Events[0].Name)
	replaced("event attribute", bad.Events[0].Attributes[0].Value.GetStringValue())
}

// Every service goes through Setup: a batch holding a span with invalid UTF-8 reaches the
// collector whole, with the invalid bytes replaced.
func TestSetupExportsSpansWithInvalidUTF8(t *testing.T) {
	c := newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	tp, shutdown, err := Setup(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	startBatch(tp)
	if err := shutdown(context.Background()); err != nil { // flushes the one batch
		t.Fatal(err)
	}
	spans, _ := c.received()
	checkBatch(t, spans)
}

// A percent-encoded invalid byte in OTEL_RESOURCE_ATTRIBUTES decodes to invalid UTF-8 in
// the resource every span shares; the spans still arrive, the value sanitized.
func TestSetupExportsWithInvalidUTF8Resource(t *testing.T) {
	c := newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=prod%FF")
	tp, shutdown, err := Setup(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	startBatch(tp)
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, res := c.received()
	checkBatch(t, spans)
	if got := res["deployment.environment.name"]; got != "prod\uFFFD" {
		t.Errorf("resource attribute arrived as %q, want %q", got, "prod\uFFFD")
	}
	if res["service.name"] != "test" {
		t.Errorf("resource lost service.name: %v", res)
	}
}

// The same batch handed to the bare OTLP exporter is lost entirely, valid span included;
// through the wrapper it arrives.
func TestInvalidUTF8LosesBatchWithoutWrapper(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	startBatch(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("recorded %d spans", len(spans))
	}

	c := newCollector(t)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(c.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(context.Background()) }()
	if err := exp.ExportSpans(context.Background(), spans); err == nil {
		t.Error("bare exporter reported success on a batch with invalid UTF-8")
	}
	if got, _ := c.received(); len(got) != 0 {
		t.Fatalf("bare exporter delivered %d spans; the wrapper would prove nothing", len(got))
	}

	if err := (validUTF8Exporter{exp}).ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	got, _ := c.received()
	checkBatch(t, got)
	for _, s := range spans {
		if s.Name() != "good" && s.Name() != "GET /x"+badBytes {
			t.Errorf("the wrapper modified a span it was handed: %q", s.Name())
		}
	}
}

// Valid spans, nearly all of them, cost the check and nothing else.
func TestValidSpansPassUnallocated(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tr := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
	_, span := tr.Start(context.Background(), "GET /ok", trace.WithAttributes(attribute.String("user_agent.original", "curl/8")))
	span.AddEvent("ev", trace.WithAttributes(attribute.Int("n", 1)))
	span.End()
	spans := rec.Ended()
	exp := validUTF8Exporter{tracetest.NewNoopExporter()}
	if n := testing.AllocsPerRun(100, func() { _ = exp.ExportSpans(context.Background(), spans) }); n != 0 {
		t.Errorf("exporting valid spans allocated %v times", n)
	}
}
