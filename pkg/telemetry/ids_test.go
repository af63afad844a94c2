package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// IDs are valid and do not repeat; the sampler's half of the trace ID takes every value
// about evenly (a 1 % ratio samples about 1 % of new traces).
func TestRandomIDs(t *testing.T) {
	seen := map[trace.TraceID]bool{}
	spans := map[trace.SpanID]bool{}
	low := 0
	const n = 100000
	for range n {
		tr, sp := randomIDs{}.NewIDs(context.Background())
		if !tr.IsValid() || !sp.IsValid() || seen[tr] || spans[sp] {
			t.Fatalf("trace %s span %s invalid or repeated", tr, sp)
		}
		seen[tr], spans[sp] = true, true
		if tr[8] < 0x80 {
			low++
		}
	}
	if low < n*45/100 || low > n*55/100 {
		t.Fatalf("%d of %d trace IDs in the low half of the sampler's range", low, n)
	}
}
