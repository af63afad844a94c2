package pipeline

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/linkmesh/linkmesh/pkg/metrics"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// Measure registers linkmesh_clicks_folded_until_timestamp_seconds: how far the counts
// reach. It is read from MongoDB at scrape time (bounded by a second), so every replica
// reports the fold as it stands whichever one leads; while MongoDB cannot say, the gauge is
// left out rather than reported stale.
func (f Folder) Measure(reg *metrics.Registry) {
	reg.Registerer.MustRegister(foldCollector{st: f.Store, until: prometheus.NewDesc(
		prometheus.BuildFQName(metrics.Namespace, "clicks", "folded_until_timestamp_seconds"),
		"Clicks stored before this time (Unix seconds) are in the analytics counts: the end of the last storage slot folded into the rollups. It trails the clock by 15 to 26 s while the fold keeps up.",
		nil, nil)})
}

type foldCollector struct {
	st    *store.Store
	until *prometheus.Desc
}

func (c foldCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.until }

func (c foldCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	until, err := c.st.FoldedUntil(ctx)
	if err != nil || until.IsZero() {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.until, prometheus.GaugeValue, float64(until.UnixMilli())/1000)
}
