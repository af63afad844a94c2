package telemetry

import (
	"context"
	"testing"
)

// Sampling is the operator's, through the standard variables: a parent-based ratio of 0
// records no new trace, of 1 every one.
func TestSamplerFromStandardVariables(t *testing.T) {
	for _, tc := range []struct {
		arg     string
		sampled bool
	}{{"0", false}, {"1", true}} {
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_traceidratio")
		t.Setenv("OTEL_TRACES_SAMPLER_ARG", tc.arg)
		tp, shutdown, err := Setup(context.Background(), "test")
		if err != nil {
			t.Fatal(err)
		}
		sampled := 0
		for range 100 {
			_, span := tp.Tracer("t").Start(context.Background(), "op")
			if span.SpanContext().IsSampled() {
				sampled++
			}
			span.End()
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // nothing to flush to: the endpoint is not there
		_ = shutdown(ctx)
		if (sampled == 100) != tc.sampled || (sampled == 0) == tc.sampled {
			t.Errorf("ratio %s sampled %d of 100 new traces", tc.arg, sampled)
		}
	}
}
