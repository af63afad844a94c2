// Package server is the Fiber server factory shared by every linkmesh service: error envelope,
// panic recovery, request ids, tracing, the 64 KiB body limit, health probes and graceful
// shutdown that fails readiness before it stops listening.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/metrics"
)

// BodyLimit is the largest request body accepted; larger ones get 413.
const BodyLimit = 64 * 1024

// Check reports whether one dependency is usable.
type Check func(ctx context.Context) error

// Options configure a Server.
type Options struct {
	Name           string
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
	// Dependencies are checked by /readyz and reported in its body and in the
	// linkmesh_dependency_up gauge, by name; they do not decide readiness. A service whose
	// datastore is away stays in its Service's endpoints and answers 503 per request (or, as
	// the gateway does for cached redirects, keeps serving what it can).
	Dependencies map[string]Check
	// Classify turns dependency failures that reach the error handler as plain errors into
	// the answer clients see (a datastore outage is a 503, not a 500).
	Classify []errs.Classifier
	// Metrics, when set, measures every request by route template and records readiness.
	Metrics *metrics.HTTP
}

// Server wraps a Fiber app with linkmesh's middleware and lifecycle.
type Server struct {
	app      *fiber.App
	log      *slog.Logger
	deps     map[string]Check
	depState sync.Map // dependency name → whether its last check passed
	draining atomic.Bool
	metrics  *metrics.HTTP
	edge     bool // set before serving; see PublicEdge
}

// PublicEdge marks the server as the one the public reaches: it continues no trace a client
// sends (see Tracing). Call it before Serve.
func (s *Server) PublicEdge() { s.edge = true }

// New builds the app with probes and middleware installed; add routes with App.
func New(opts Options) *Server {
	s := &Server{log: opts.Logger, deps: map[string]Check{}, metrics: opts.Metrics}
	for name, check := range opts.Dependencies {
		s.deps[name] = check
	}
	s.app = fiber.New(fiber.Config{
		AppName:               opts.Name,
		DisableStartupMessage: true,
		// Paths are case-sensitive like short codes are; a rule keyed on a path (the
		// same-site check of /api/auth/) must not be dodged by writing it in capitals.
		CaseSensitive:  true,
		ErrorHandler:   withRequestID(errs.Handler(opts.Logger, opts.Classify...)),
		BodyLimit:      BodyLimit,
		ReadBufferSize: 16 * 1024,
		ReadTimeout:    15 * time.Second,
		WriteTimeout:   15 * time.Second,
		IdleTimeout:    90 * time.Second,
	})
	if s.metrics != nil {
		s.app.Use(s.metrics.Middleware())
	}
	s.app.Use(recover.New(recover.Config{EnableStackTrace: true, StackTraceHandler: s.logPanic}))
	s.app.Use(RequestID())
	s.app.Use("/internal", deadline)
	s.app.Get("/healthz", func(c *fiber.Ctx) error { return ok(c) })
	s.app.Get("/readyz", s.readyz)
	// With tracing off there is no middleware at all. With it on, only W3C trace context
	// crosses this edge, so a client's baggage is neither trusted inward nor echoed back.
	if tp := opts.TracerProvider; tp != nil && !isNoop(tp) {
		s.app.Use(Tracing(tp, func() bool { return !s.edge }))
	}
	return s
}

// TimeoutHeader carries, on an internal call, how many milliseconds the caller will wait for
// the answer; the callee gives up its work when they are over, so nothing keeps running (and
// holding a database connection) for an answer no one will read.
const TimeoutHeader = "Linkmesh-Timeout"

// MaxInternalRequest bounds the work of every internal request, whatever the caller asks.
const MaxInternalRequest = 30 * time.Second

// deadline bounds an internal request's context by the caller's TimeoutHeader, at most
// MaxInternalRequest. Public routes never read the header: a client must not choose how long
// the system works for it.
func deadline(c *fiber.Ctx) error {
	d := MaxInternalRequest
	if ms, err := strconv.ParseInt(c.Get(TimeoutHeader), 10, 64); err == nil && ms > 0 && ms < d.Milliseconds() {
		d = time.Duration(ms) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), d)
	defer cancel()
	c.SetUserContext(ctx)
	return c.Next()
}

func isNoop(tp trace.TracerProvider) bool {
	_, ok := tp.(noop.TracerProvider)
	return ok
}

// App returns the Fiber app for route registration.
func (s *Server) App() *fiber.App { return s.app }

func (s *Server) logPanic(c *fiber.Ctx, e any) {
	s.log.ErrorContext(c.UserContext(), "panic", "path", c.Path(), "panic", fmt.Sprint(e))
}

func ok(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

// readyz answers 200 unless the service is draining for shutdown. The body reports each
// dependency ("ok" or "unavailable"; the status is then "degraded") without deciding
// anything: readiness takes a pod out of its Service, and a datastore outage is better
// answered per request (503, or the gateway's cached redirects) than by leaving callers with
// no endpoint at all.
func (s *Server) readyz(c *fiber.Ctx) error {
	if s.draining.Load() {
		if s.metrics != nil {
			s.metrics.SetReady(false)
		}
		return errs.E(errs.KindUnavailable, "shutting down")
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	deps, degraded := s.checkDependencies(ctx)
	if s.metrics != nil {
		s.metrics.SetReady(true)
	}
	status := "ok"
	if degraded {
		status = "degraded"
	}
	body := fiber.Map{"status": status}
	if len(deps) > 0 {
		body["dependencies"] = deps
	}
	return c.JSON(body, fiber.MIMEApplicationJSONCharsetUTF8)
}

// checkDependencies runs the dependency checks at once and records each in the metrics.
func (s *Server) checkDependencies(ctx context.Context) (map[string]string, bool) {
	if len(s.deps) == 0 {
		return nil, false
	}
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(s.deps))
	for name, check := range s.deps {
		go func() { results <- result{name, check(ctx)} }()
	}
	out := make(map[string]string, len(s.deps))
	degraded := false
	for range s.deps {
		r := <-results
		out[r.name] = "ok"
		if r.err != nil {
			out[r.name] = "unavailable"
			degraded = true
		}
		// Logged when it changes, not at every probe.
		if was, seen := s.depState.Swap(r.name, r.err == nil); !seen || was.(bool) != (r.err == nil) {
			if r.err != nil {
				s.log.WarnContext(ctx, "dependency unavailable", "dependency", r.name, "err", r.err)
			} else if seen {
				s.log.InfoContext(ctx, "dependency available again", "dependency", r.name)
			}
		}
		if s.metrics != nil {
			s.metrics.SetDependency(r.name, r.err == nil)
		}
	}
	return out, degraded
}

// Serve serves on ln until ctx is cancelled, then fails readiness, waits drain so load
// balancers notice, and shuts down, letting in-flight requests finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	// Fiber answers methods it does not know with a plain-text 400 before any handler runs.
	srv := s.app.Server()
	srv.Handler = knownMethodsOnly(srv.Handler)
	// The dependency gauges start from a check of their own, not from the kubelet's first
	// probe, so a service nobody probes (a local run) still exposes them.
	if s.metrics != nil && len(s.deps) > 0 {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		s.checkDependencies(cctx)
		cancel()
	}
	sweepCtx, stopSweep := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSweep()
	errc := make(chan error, 1)
	go func() { errc <- s.app.Listener(sweepDeadlines(sweepCtx, ln)) }()
	s.log.Info("listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.draining.Store(true)
	if drain > 0 {
		s.log.Info("draining", "for", drain.String())
		time.Sleep(drain)
	}
	if err := s.app.ShutdownWithTimeout(10 * time.Second); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
