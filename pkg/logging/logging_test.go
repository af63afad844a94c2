package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestLinesCarryTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := New(&buf, "link", slog.LevelInfo)
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	log.With("k", "v").InfoContext(ctx, "hello")
	log.DebugContext(ctx, "dropped below level")

	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil {
		t.Fatalf("want exactly one JSON line, got %q: %v", buf.String(), err)
	}
	if line["trace_id"] != sc.TraceID().String() || line["span_id"] != sc.SpanID().String() {
		t.Fatalf("trace ids missing: %v", line)
	}
	if line["service"] != "link" || line["k"] != "v" {
		t.Fatalf("attributes missing: %v", line)
	}
}
