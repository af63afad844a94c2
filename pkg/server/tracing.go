package server

import (
	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/linkmesh/linkmesh/pkg/metrics"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// tracingScope names the server spans' instrumentation.
const tracingScope = "github.com/linkmesh/linkmesh/pkg/server"

// Tracing starts a server span for every request, a child of the W3C trace context the
// request carries when that is trusted, and answers its traceparent. It does no work for a span the sampler
// drops beyond starting it: names and attributes are set only on a recording span, so a
// 1 % sample costs the other 99 % next to nothing (the contrib middleware built a copy of
// every header and a dozen attributes per request, sampled or not).
//
// A span records what an operator needs and nothing about the visitor: method, scheme,
// path, route, host and status — no client address, query string, User-Agent or
// credentials, which traces must not carry off (the client address never leaves the
// gateway's memory).
//
// An error from the handlers is answered here, through the app's error handler, so that
// the span sees the status the client gets; the middleware then returns nil.
//
// trusted tells whether a request's trace context may be continued. At the public edge it
// may not: a client's sampled flag would otherwise have every request it sends traced and
// exported, whatever the sampling ratio, so the edge starts a trace of its own and only links
// the client's.
func Tracing(tp trace.TracerProvider, trusted func() bool) fiber.Handler {
	tracer := tp.Tracer(tracingScope)
	prop := propagation.TraceContext{}
	return func(c *fiber.Ctx) error {
		ctx := c.UserContext()
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
		if c.Request().Header.Peek("traceparent") != nil {
			in := prop.Extract(ctx, carrier{&c.Request().Header})
			if trusted() {
				ctx = in
			} else if sc := trace.SpanContextFromContext(in); sc.IsValid() {
				opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: sc}))
			}
		}
		ctx, span := tracer.Start(ctx, "HTTP", opts...) // named below, once routed
		own := c.Route()                                // this middleware's: still it after Next, no route matched
		parent := c.UserContext()
		c.SetUserContext(ctx)
		answered := false
		defer func() {
			if !answered { // a panic on its way to the recover middleware: a 500
				if span.IsRecording() {
					annotate(c, span, own, fiber.StatusInternalServerError)
					span.SetStatus(codes.Error, "panic")
				}
				prop.Inject(ctx, carrier{&c.Response().Header})
				// The user context keeps the span, so the panic's log lines name the trace.
			}
			span.End()
		}()

		err := c.Next()
		if err != nil {
			if span.IsRecording() {
				span.RecordError(err)
			}
			if herr := c.App().Config().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		answered = true
		if span.IsRecording() {
			annotate(c, span, own, c.Response().StatusCode())
		}
		if sc := span.SpanContext(); sc.IsSampled() {
			// For the metrics middleware, which runs outside this one and so never sees the
			// span's context: the duration's exemplar.
			c.Locals(metrics.TraceIDLocal, sc.TraceID().String())
		}
		prop.Inject(ctx, carrier{&c.Response().Header})
		c.SetUserContext(parent)
		return nil
	}
}

// annotate names a recording span after the request's route and sets its attributes and,
// for a server error, its status. Every string is copied or constant: fasthttp reuses the
// request's buffers once the handler returns, long before the span is exported.
func annotate(c *fiber.Ctx, span trace.Span, own *fiber.Route, status int) {
	route := c.Route().Path // immutable for the app's life
	if c.Route() == own {
		route = metrics.Unmatched // as the metrics label it: never the raw path
	}
	method := utils.CopyString(c.Method()) // Fiber's aliases the connection's buffer
	scheme := "http"                       // not c.Protocol(): it believes X-Forwarded-Proto and aliases it
	if c.Context().IsTLS() {
		scheme = "https"
	}
	span.SetName(method + " " + route)
	span.SetAttributes(
		semconv.HTTPRequestMethodKey.String(method),
		semconv.URLScheme(scheme),
		semconv.URLPath(string(c.Request().URI().Path())),
		semconv.HTTPRoute(route),
		semconv.ServerAddress(string(c.Request().Host())),
		semconv.HTTPResponseStatusCode(status),
	)
	if status >= fiber.StatusInternalServerError {
		span.SetStatus(codes.Error, fasthttp.StatusMessage(status))
	}
}

// carrier reads and writes trace context in a request's or a response's headers, without
// copying them.
type carrier struct {
	h interface {
		Peek(key string) []byte
		Set(key, value string)
		VisitAll(f func(key, value []byte))
	}
}

func (c carrier) Get(key string) string { return string(c.h.Peek(key)) }
func (c carrier) Set(key, value string) { c.h.Set(key, value) }
func (c carrier) Keys() []string {
	var keys []string
	c.h.VisitAll(func(k, _ []byte) { keys = append(keys, string(k)) })
	return keys
}
