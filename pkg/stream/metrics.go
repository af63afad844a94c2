package stream

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/linkmesh/linkmesh/pkg/metrics"
)

// Measure registers the worker's metrics: its totals, and the group's lag and pending
// entries, asked of Redis at scrape time (XINFO GROUPS, bounded by a second) so that every
// replica reports the group as it stands.
func (w *Worker) Measure(reg *metrics.Registry) {
	labels := prometheus.Labels{"stream": w.opts.Stream, "group": w.opts.Group}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(metrics.Namespace, "stream", name), help, nil, labels)
	}
	reg.Registerer.MustRegister(&workerCollector{w: w,
		processed: desc("entries_processed_total", "Stream entries handled and acknowledged by this replica."),
		failures:  desc("handler_errors_total", "Handler calls of this replica that failed; their entries are retried."),
		dead:      desc("entries_dead_lettered_total", "Entries moved to the dead-letter stream after too many deliveries."),
		lag:       desc("lag_entries", "Entries of the stream not yet delivered to the group."),
		pending:   desc("pending_entries", "Entries delivered to the group and not yet acknowledged."),
	})
}

type workerCollector struct {
	w                                       *Worker
	processed, failures, dead, lag, pending *prometheus.Desc
}

func (c *workerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.processed, c.failures, c.dead, c.lag, c.pending} {
		ch <- d
	}
}

func (c *workerCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.w.Stats()
	ch <- prometheus.MustNewConstMetric(c.processed, prometheus.CounterValue, float64(s.Handled))
	ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(s.Failures))
	ch <- prometheus.MustNewConstMetric(c.dead, prometheus.CounterValue, float64(s.DeadLettered))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	groups, err := c.w.opts.Client.XInfoGroups(ctx, c.w.opts.Stream).Result()
	if err != nil {
		// Redis away or the stream not yet made: the gauges are left out rather than
		// reported as zero, which would read as "caught up"; readiness reports the outage.
		return
	}
	for _, g := range groups {
		if g.Name != c.w.opts.Group {
			continue
		}
		if g.Lag >= 0 { // -1: Redis cannot tell after deletions past the group's position
			ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(g.Lag))
		}
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(g.Pending))
	}
}
