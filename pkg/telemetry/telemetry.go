// Package telemetry sets up OpenTelemetry tracing from the standard OTEL_* variables.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Propagator is W3C TraceContext plus Baggage, used on every hop.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// Enabled reports whether the environment names an OTLP endpoint and does not turn traces off.
func Enabled() bool {
	if os.Getenv("OTEL_SDK_DISABLED") == "true" || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup returns the tracer provider for service and a shutdown that flushes pending spans.
// With no endpoint configured it returns a no-op provider, so tracing costs nothing locally.
// The OTLP/HTTP exporter, sampler and resource read the standard OTEL_* variables.
func Setup(ctx context.Context, service string) (trace.TracerProvider, func(context.Context) error, error) {
	otel.SetTextMapPropagator(Propagator())
	if !Enabled() {
		return noop.NewTracerProvider(), func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("create otlp exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(),
		resource.NewSchemaless(semconv.ServiceName(service), semconv.ServiceNamespace("linkmesh")))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, nil, fmt.Errorf("build resource: %w", err)
	}
	// Variables such as OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over our defaults;
	// a malformed one is the operator's mistake to hear about, not to have ignored.
	envRes, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		return nil, nil, fmt.Errorf("read OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	if res, err = resource.Merge(res, envRes); err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, nil, fmt.Errorf("merge resource: %w", err)
	}
	// Span strings hold client input; one invalid UTF-8 string would otherwise lose the whole batch.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(validUTF8Exporter{exp}), sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(randomIDs{}))
	otel.SetTracerProvider(tp)
	return tp, tp.Shutdown, nil
}
