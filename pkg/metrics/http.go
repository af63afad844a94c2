package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
)

// Unmatched is the route label of requests no route matched: the raw path never becomes a
// label, or every probe of a random URL would add a series.
const Unmatched = "unmatched"

// durationBuckets reach from a cached redirect (under a millisecond) to the slowest API
// call a client waits for (the creation budget).
var durationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// HTTP holds the RED metrics of a service's routes, labelled by route template.
//
// Every request of a route pays an atomic add to its counter and an observation of its
// histogram, both looked up by the route's pointer in a table made once: no label is hashed
// and no lock taken per request (the redirect answers a request in microseconds, and the
// label lookups of the vectors cost it a tenth of that). The in-flight gauge is an atomic
// read at scrape time.
type HTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight atomic.Int64
	ready    prometheus.Gauge
	deps     *prometheus.GaugeVec

	once   sync.Once
	routes map[*fiber.Route]*routeMetrics // every route registered by the first request; read-only after
}

// routeMetrics are one route's series: its histogram, and its counter per status code,
// each resolved on its first request (a route nobody asked for has no series).
type routeMetrics struct {
	method, route string
	requests      *prometheus.CounterVec
	durations     *prometheus.HistogramVec
	duration      atomic.Pointer[observer]
	codes         [600]atomic.Pointer[counter]
}

type (
	counter  struct{ prometheus.Counter }
	observer struct{ prometheus.Observer }
)

// observe records one answer's time.
func (m *routeMetrics) observe(seconds float64, traceID string) {
	o := m.duration.Load()
	if o == nil {
		o = &observer{m.durations.WithLabelValues(m.method, m.route)}
		m.duration.Store(o)
	}
	observe(o.Observer, seconds, traceID)
}

// observe records seconds on o, with the trace that took them as the bucket's exemplar when
// the request was traced (sampled): the dashboards' latency panels link from a slow bucket to
// the trace of one of its requests. Exemplars are served in the OpenMetrics exposition only.
func observe(o prometheus.Observer, seconds float64, traceID string) {
	if traceID != "" {
		if eo, ok := o.(prometheus.ExemplarObserver); ok {
			eo.ObserveWithExemplar(seconds, prometheus.Labels{"trace_id": traceID})
			return
		}
	}
	o.Observe(seconds)
}

// TraceIDLocal is the Fiber local under which the tracing middleware, which runs inside this
// one and restores the request's context before it returns, leaves the id of a sampled
// request's trace.
const TraceIDLocal = "linkmesh.trace_id"

// count counts one answer of status code.
func (m *routeMetrics) count(code int) {
	if code < 0 || code >= len(m.codes) {
		m.requests.WithLabelValues(m.method, m.route, strconv.Itoa(code)).Inc()
		return
	}
	c := m.codes[code].Load()
	if c == nil {
		c = &counter{m.requests.WithLabelValues(m.method, m.route, strconv.Itoa(code))}
		m.codes[code].Store(c) // a racing twin stores the same series
	}
	c.Inc()
}

// HTTP registers the RED metrics and the readiness gauge.
func (r *Registry) HTTP() *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by method, route template and status code."}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "http_request_duration_seconds",
			Help: "Time to answer an HTTP request, by method and route template.", Buckets: durationBuckets}, []string{"method", "route"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "ready",
			Help: "1 when the last readiness check passed, 0 when the service is draining."}),
		deps: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "dependency_up",
			Help: "1 when the last readiness check reached the dependency (mongodb, redis), 0 when it did not."}, []string{"dependency"}),
	}
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "http_requests_in_flight",
		Help: "HTTP requests being answered."}, func() float64 { return float64(h.inflight.Load()) })
	r.Registerer.MustRegister(h.requests, h.duration, inflight, h.ready, h.deps)
	return h
}

// SetDependency records whether the last readiness check reached a dependency.
func (h *HTTP) SetDependency(name string, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	h.deps.WithLabelValues(name).Set(v)
}

// SetReady records the outcome of a readiness check.
func (h *HTTP) SetReady(ok bool) {
	if ok {
		h.ready.Set(1)
	} else {
		h.ready.Set(0)
	}
}

// Middleware measures every request. It must come first: it answers an error through the
// app's error handler itself, so the status it records is the one the client gets (a
// recovered panic included). The routes are read on the first request; every route must
// be registered before the app serves. A request's time runs from when the server had
// read it (fasthttp's clock reading, which the handlers share).
func (h *HTTP) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		h.inflight.Add(1)
		own := c.Route()
		err := c.Next()
		if err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		h.inflight.Add(-1)
		took := time.Since(c.Context().Time()).Seconds()
		traceID, _ := c.Locals(TraceIDLocal).(string)
		if m := h.route(c, own); m != nil {
			m.count(c.Response().StatusCode())
			m.observe(took, traceID)
			return nil
		}
		method := methodLabel(c.Method())
		h.requests.WithLabelValues(method, Unmatched, strconv.Itoa(c.Response().StatusCode())).Inc()
		observe(h.duration.WithLabelValues(method, Unmatched), took, traceID)
		return nil
	}
}

// methodLabel is the method as a label: one of a fixed set, as a constant string. Fiber's
// c.Method() aliases the connection's buffer, which the next request overwrites, so it
// must never be kept as a label value ("GET" would become "GETT"); and an unknown method
// must not add series.
func methodLabel(m string) string {
	if label, ok := methodLabels[m]; ok {
		return label
	}
	return "OTHER"
}

var methodLabels = map[string]string{}

func init() {
	for _, m := range []string{fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut,
		fiber.MethodPatch, fiber.MethodDelete, fiber.MethodOptions} {
		methodLabels[m] = m // the constant, not the request's bytes
	}
}

// route is the series of the route that answered c, or nil when none did: when nothing
// matched, Fiber's current route is the last middleware passed (or, outside any route,
// own), which is why the answer is checked against the registered routes.
func (h *HTTP) route(c *fiber.Ctx, own *fiber.Route) *routeMetrics {
	h.once.Do(func() { h.routes = h.table(c.App()) })
	r := c.Route()
	if r == own {
		return nil
	}
	return h.routes[r]
}

// table makes the series of every route of app, by the route's pointer (what c.Route()
// returns), leaving out middleware and methods outside the label set.
func (h *HTTP) table(app *fiber.App) map[*fiber.Route]*routeMetrics {
	registered := map[string]bool{}
	for _, r := range app.GetRoutes(true) {
		registered[r.Method+" "+r.Path] = true
	}
	routes := map[*fiber.Route]*routeMetrics{}
	for _, stack := range app.Stack() {
		for _, r := range stack {
			method := methodLabel(r.Method)
			if method == "OTHER" || !registered[r.Method+" "+r.Path] {
				continue
			}
			routes[r] = &routeMetrics{method: method, route: r.Path, requests: h.requests, durations: h.duration}
		}
	}
	return routes
}
