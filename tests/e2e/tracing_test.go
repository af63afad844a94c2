package e2e

import (
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// One redirect that misses the gateway cache is one trace: gateway server span → internal
// client span → link server span → MongoDB and Redis spans.
func TestOneTraceAcrossServices(t *testing.T) {
	code, _ := shorten(t, newClientIP(), `{"url":"https://93.184.216.34/traced"}`)
	r := do(t, "GET", "/"+code, "", "")
	if r.status != 302 {
		t.Fatalf("redirect %d", r.status)
	}
	parts := strings.Split(r.header.Get("traceparent"), "-")
	if len(parts) != 4 {
		t.Fatalf("no traceparent on the response: %v", r.header)
	}
	traceID := parts[1]

	var gwServer, client, linkServer, mongoSpan, redisSpan *span
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		gwServer, client, linkServer, mongoSpan, redisSpan = nil, nil, nil, nil, nil
		spans := otlp.trace(traceID)
		for i := range spans {
			s := &spans[i]
			switch {
			case s.service == "gateway" && s.Kind == tracepb.Span_SPAN_KIND_SERVER:
				gwServer = s
			case s.service == "gateway" && s.Kind == tracepb.Span_SPAN_KIND_CLIENT && strings.Contains(s.Name, "/resolve"):
				client = s
			case s.service == "link" && s.Kind == tracepb.Span_SPAN_KIND_SERVER:
				linkServer = s
			case s.service == "link" && s.attr("db.system.name") == "mongodb":
				mongoSpan = s
			case s.service == "link" && (s.attr("db.system") == "redis" || s.attr("db.system.name") == "redis"):
				redisSpan = s
			}
		}
		if gwServer != nil && client != nil && linkServer != nil && mongoSpan != nil && redisSpan != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if gwServer == nil || client == nil || linkServer == nil || mongoSpan == nil || redisSpan == nil {
		t.Fatalf("incomplete trace %s: gateway %v client %v link %v mongo %v redis %v",
			traceID, gwServer != nil, client != nil, linkServer != nil, mongoSpan != nil, redisSpan != nil)
	}
	if gwServer.spanID() != parts[2] {
		t.Errorf("traceparent names span %s, the gateway server span is %s", parts[2], gwServer.spanID())
	}
	chain := []struct {
		name          string
		child, parent *span
	}{
		{"internal client ← gateway server", client, gwServer},
		{"link server ← internal client", linkServer, client},
		{"mongodb ← link server", mongoSpan, linkServer},
		{"redis ← link server", redisSpan, linkServer},
	}
	for _, c := range chain {
		if c.child.parentID() != c.parent.spanID() {
			t.Errorf("%s: parent is %s, want %s", c.name, c.child.parentID(), c.parent.spanID())
		}
	}
	if mongoSpan.attr("db.collection.name") != "links" || mongoSpan.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("mongo span %q attributes %v", mongoSpan.Name, mongoSpan.Attributes)
	}
}
