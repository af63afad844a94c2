package metrics

import (
	"strconv"
	"sync"
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
type HTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight prometheus.Gauge
	ready    prometheus.Gauge

	once   sync.Once
	routes map[string]bool // "METHOD path" of every route registered by then
}

// HTTP registers the RED metrics and the readiness gauge.
func (r *Registry) HTTP() *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by method, route template and status code."}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "http_request_duration_seconds",
			Help: "Time to answer an HTTP request, by method and route template.", Buckets: durationBuckets}, []string{"method", "route"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "http_requests_in_flight",
			Help: "HTTP requests being answered."}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "ready",
			Help: "1 when the last readiness check passed, 0 when it failed or the service is draining."}),
	}
	r.Registerer.MustRegister(h.requests, h.duration, h.inflight, h.ready)
	return h
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
// be registered before the app serves.
func (h *HTTP) Middleware() fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		h.inflight.Inc()
		own := c.Route()
		err := c.Next()
		if err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				_ = c.SendStatus(fiber.StatusInternalServerError)
			}
		}
		h.inflight.Dec()
		method := methodLabel(c.Method())
		route := h.route(c, own, method)
		h.requests.WithLabelValues(method, route, strconv.Itoa(c.Response().StatusCode())).Inc()
		h.duration.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
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

// route is the template of the route that answered c, or Unmatched: when nothing matched,
// Fiber's current route is the last middleware passed (or, outside any route, the raw path),
// which is why the answer is checked against the registered routes.
func (h *HTTP) route(c *fiber.Ctx, own *fiber.Route, method string) string {
	h.once.Do(func() {
		h.routes = map[string]bool{}
		for _, r := range c.App().GetRoutes(true) {
			h.routes[r.Method+" "+r.Path] = true
		}
	})
	r := c.Route()
	if r == own || !h.routes[method+" "+r.Path] {
		return Unmatched
	}
	return r.Path
}
