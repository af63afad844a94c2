// Package metrics is every service's Prometheus registry: the Go runtime and process
// collectors, the RED metrics of its HTTP routes and whatever the service adds, every series
// labelled with the service's name, served on a listener of its own (LINKMESH_METRICS_ADDR),
// never on the service's public port.
package metrics

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every linkmesh metric.
const Namespace = "linkmesh"

// Registry holds one service's metrics.
type Registry struct {
	gatherer *prometheus.Registry
	// Registerer adds the service's own metrics; each gets the service label.
	Registerer prometheus.Registerer
}

// New returns service's registry with the Go runtime and process collectors registered.
func New(service string) *Registry {
	reg := prometheus.NewRegistry()
	r := &Registry{gatherer: reg, Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"service": service}, reg)}
	r.Registerer.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Gatherer is what the registry exposes, for tests and the handler.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.gatherer }

// Handler serves the exposition format, compressed when the scraper accepts it; a collector
// that fails is logged and the rest still served.
func (r *Registry) Handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(r.gatherer, promhttp.HandlerOpts{
		ErrorLog:            slogPrinter{log},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
		// OpenMetrics when the scraper asks for it (Prometheus does): the only exposition that
		// carries the request histograms' exemplars (trace ids).
		EnableOpenMetrics: true,
	})
}

// CounterFunc registers a counter read from f at scrape time, for totals a component
// already keeps (a queue's drops, a worker's acknowledgements).
func (r *Registry) CounterFunc(name, help string, f func() float64) {
	r.Registerer.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, f))
}

// GaugeFunc registers a gauge read from f at scrape time.
func (r *Registry) GaugeFunc(name, help string, f func() float64) {
	r.Registerer.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, f))
}

// CounterVec registers a counter with the given labels.
func (r *Registry) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	r.Registerer.MustRegister(c)
	return c
}

type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Error("metrics exposition", "err", fmt.Sprint(v...)) }
