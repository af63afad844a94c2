package app

import (
	"github.com/linkmesh/linkmesh/pkg/metrics"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clicks"
	"github.com/linkmesh/linkmesh/services/gateway/internal/redirect"
)

// measure exposes the redirect cache's and the click pipeline's totals, read at scrape time
// from the counters they keep anyway, so the redirect pays nothing more for them.
func measure(reg *metrics.Registry, cache *redirect.Cache, rec *clicks.Recorder) {
	stat := func(f func(redirect.Stats) int64) func() float64 {
		return func() float64 { return float64(f(cache.Stats())) }
	}
	reg.CounterFunc("redirect_cache_hits_total", "Redirect lookups answered from the cache.", stat(func(s redirect.Stats) int64 { return s.Hits }))
	reg.CounterFunc("redirect_cache_misses_total", "Redirect lookups that waited for the link service.", stat(func(s redirect.Stats) int64 { return s.Misses }))
	reg.CounterFunc("redirect_cache_fills_total", "Link service answers stored in the cache, background refreshes included.", stat(func(s redirect.Stats) int64 { return s.Fills }))
	reg.CounterFunc("redirect_cache_stale_total", "Redirects answered from an expired entry while the link service could not be reached.", stat(func(s redirect.Stats) int64 { return s.Stale }))
	reg.GaugeFunc("redirect_cache_entries", "Codes held in the redirect cache.", func() float64 { return float64(cache.Len()) })

	reg.GaugeFunc("click_queue_depth", "Visits in the gateway's click spool, not yet on the clicks stream.", func() float64 {
		d, _ := rec.Queue()
		return float64(d)
	})
	reg.GaugeFunc("click_queue_capacity", "Visits the gateway's click spool may hold (LINKMESH_CLICK_QUEUE).", func() float64 {
		_, c := rec.Queue()
		return float64(c)
	})
	reg.GaugeFunc("click_spool_bytes", "Bytes of the gateway's click spool the waiting visits take.", func() float64 {
		u, _ := rec.SpoolBytes()
		return float64(u)
	})
	reg.GaugeFunc("click_spool_capacity_bytes", "Size of the gateway's click spool (LINKMESH_CLICK_SPOOL_MB).", func() float64 {
		_, c := rec.SpoolBytes()
		return float64(c)
	})
	reg.CounterFunc("clicks_enqueued_total", "Visits taken by the click spool.", func() float64 { return float64(rec.Accepted()) })
	reg.CounterFunc("clicks_dropped_total", "Visits lost in the gateway: refused by a full spool, unreadable in the spool at start, or, with the spool in memory, not written by shutdown.",
		func() float64 { return float64(rec.Dropped()) })
	reg.CounterFunc("clicks_published_total", "Clicks written to the clicks stream.", func() float64 { return float64(rec.Published()) })
	reg.CounterFunc("clicks_robots_total", "Visits recognised as crawlers or link previews, recorded as no click.", func() float64 { return float64(rec.Robots()) })
}
