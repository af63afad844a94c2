package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// tracingRatio is the sampling the Helm chart ships: a parent-based 1 % of new traces.
const tracingRatio = "0.01"

// minTracingRatio is the least throughput of the traced gateway against the untraced one:
// at 1 % sampling, tracing may cost at most 10 %.
const minTracingRatio = 0.90

// otlpSink accepts OTLP/HTTP trace exports and counts them, so that the run shows spans were
// really exported.
type otlpSink struct {
	srv     *http.Server
	url     string
	exports atomic.Int64
}

func startOTLPSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &otlpSink{url: "http://" + ln.Addr().String()}
	s.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.exports.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	})}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// runTracing measures the warm redirect with tracing exported at the chart's 1 % against the
// same gateway without tracing, in alternating rounds, restarting the gateway between them.
func runTracing(ctx context.Context, o options, svcs *stack.Services, codes map[string]string, luaPath string, rounds int) (target, error) {
	sink, err := startOTLPSink()
	if err != nil {
		return target{}, err
	}
	defer sink.srv.Close()
	traced := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": sink.url, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
		"OTEL_TRACES_SAMPLER_ARG": tracingRatio, "OTEL_BSP_SCHEDULE_DELAY": "1000",
	}
	off := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_TRACES_SAMPLER": "", "OTEL_TRACES_SAMPLER_ARG": ""}
	fmt.Printf("\n1b. the same GET /{code} with tracing exported over OTLP/HTTP at a parent-based %s ratio, against tracing off, %d rounds of %s\n\n",
		tracingRatio, rounds, o.duration)
	fmt.Printf("%-7s %-10s %12s %10s %10s %8s\n", "round", "tracing", "req/s", "p50", "p99", "ratio")
	var on, plain []float64
	for r := 1; r <= rounds; r++ {
		order := []bool{false, true}
		if r%2 == 0 {
			order = []bool{true, false}
		}
		var res [2]wrkResult
		for _, tracing := range order {
			env := off
			if tracing {
				env = traced
			}
			svcs.StopService("gateway")
			if err := svcs.RestartServiceWith(ctx, "gateway", env); err != nil {
				return target{}, err
			}
			if err := visitAll(ctx, svcs.GatewayURL, codes); err != nil {
				return target{}, err
			}
			w, err := runWrk(ctx, o, svcs.GatewayURL, luaPath, o.duration)
			if err != nil {
				return target{}, err
			}
			if tracing {
				res[1] = w
			} else {
				res[0] = w
			}
		}
		fmt.Printf("%-7d %-10s %12.0f %10s %10s\n", r, "off", res[0].rps, res[0].p50, res[0].p99)
		fmt.Printf("%-7d %-10s %12.0f %10s %10s %7.2f×\n", r, "1 %", res[1].rps, res[1].p50, res[1].p99, res[1].rps/res[0].rps)
		plain, on = append(plain, res[0].rps), append(on, res[1].rps)
	}
	// Leave the gateway as it was for the phases that follow.
	svcs.StopService("gateway")
	if err := svcs.RestartServiceWith(ctx, "gateway", off); err != nil {
		return target{}, err
	}
	if err := visitAll(ctx, svcs.GatewayURL, codes); err != nil {
		return target{}, err
	}
	ratio := median(on) / median(plain)
	fmt.Printf("\nmedian req/s: tracing off %.0f, tracing at 1 %% %.0f → %.2f× (target ≥ %.2f×); %d OTLP exports received\n",
		median(plain), median(on), ratio, minTracingRatio, sink.exports.Load())
	if sink.exports.Load() == 0 {
		return target{}, fmt.Errorf("tracing at %s exported nothing", tracingRatio)
	}
	return target{name: "tracing at 1 % / off", got: ratio, min: minTracingRatio}, nil
}
