package pipeline

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/linkmesh/linkmesh/pkg/metrics"
)

// Measure registers linkmesh_clicks_counted_until_timestamp_seconds: how far the counts
// reach. It is read from MongoDB at scrape time (bounded by a second), so every replica
// reports the consumers as they stand; while MongoDB cannot say, the gauge is left out
// rather than reported stale.
func (c *Consumer) Measure(reg *metrics.Registry) {
	reg.Registerer.MustRegister(countedCollector{c: c, until: prometheus.NewDesc(
		prometheus.BuildFQName(metrics.Namespace, "clicks", "counted_until_timestamp_seconds"),
		"Clicks stored before this time (Unix seconds) are in the analytics counts: when the oldest click still pending was stored, or the time of the scrape when none is.",
		nil, nil)})
}

type countedCollector struct {
	c     *Consumer
	until *prometheus.Desc
}

func (cc countedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- cc.until }

func (cc countedCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	until, err := cc.c.Store.AppliedUntil(ctx, cc.c.Now())
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(cc.until, prometheus.GaugeValue, float64(until.UnixMilli())/1000)
}
