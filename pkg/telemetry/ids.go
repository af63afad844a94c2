package telemetry

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
)

// randomIDs gives trace and span IDs from math/rand/v2's generator, which is seeded from
// the operating system and kept per processor: no lock. The SDK's default generator takes
// one mutex for every span, on every request of every service where tracing is on, whether
// or not the span is sampled. The ratio sampler reads the trace ID's low 8 bytes, which are
// uniformly random here too.
type randomIDs struct{}

func (randomIDs) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	var t trace.TraceID
	for !t.IsValid() {
		binary.BigEndian.PutUint64(t[:8], rand.Uint64())
		binary.BigEndian.PutUint64(t[8:], rand.Uint64())
	}
	return t, newSpanID()
}

func (randomIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		binary.BigEndian.PutUint64(s[:], rand.Uint64())
	}
	return s
}
