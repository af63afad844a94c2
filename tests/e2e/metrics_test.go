package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads one process's metrics endpoint.
func scrape(t *testing.T, name string) map[string]*dto.MetricFamily {
	t.Helper()
	url := services.MetricsURLs[name]
	if url == "" {
		t.Fatalf("%s has no metrics listener", name)
	}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %d", name, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s's exposition: %v", name, err)
	}
	return families
}

// value sums the samples of family whose labels include want.
func value(families map[string]*dto.MetricFamily, family string, want map[string]string) (float64, bool) {
	f, ok := families[family]
	if !ok {
		return 0, false
	}
	var sum float64
	found := false
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum, found
}

func TestMetricsOfEveryService(t *testing.T) {
	// Traffic each service measures: a creation (quota), a redirect (cache, click queue),
	// a failed login (auth), and the stream the analytics service consumes.
	ip := newClientIP()
	code, _ := shorten(t, ip, `{"url":"https://93.184.216.34/metrics-test"}`)
	for range 3 {
		if r := do(t, "GET", "/"+code, "", ip); r.status != 302 {
			t.Fatalf("redirect: %d", r.status)
		}
	}
	if r, _ := loginAs(t, "nobody."+dbPrefix+"@example.com", "wrong-password-1", newClientIP()); r.status != 401 {
		t.Fatalf("login with a wrong password: %d %s", r.status, r.body)
	}
	// The metrics never share the public listener.
	if r := do(t, "GET", "/metrics", "", ""); strings.Contains(string(r.body), "linkmesh_http_requests_total") || r.status == 200 {
		t.Fatalf("the gateway's public port answers /metrics: %d", r.status)
	}

	for _, svc := range []string{"gateway", "auth", "link", "analytics", "moderation", "quota"} {
		fs := scrape(t, svc)
		for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "linkmesh_http_requests_total",
			"linkmesh_http_request_duration_seconds", "linkmesh_http_requests_in_flight", "linkmesh_ready"} {
			if _, ok := value(fs, name, map[string]string{"service": svc}); !ok {
				t.Errorf("%s exposes no %s labelled service=%q", svc, name, svc)
			}
		}
		if v, _ := value(fs, "linkmesh_ready", nil); v != 1 {
			t.Errorf("%s: linkmesh_ready = %v after its readiness probe passed", svc, v)
		}
		for _, m := range fs["linkmesh_http_requests_total"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" && (strings.Contains(l.GetValue(), code) || strings.Contains(l.GetValue(), "nobody")) {
					t.Errorf("%s: a raw path became a route label: %q", svc, l.GetValue())
				}
			}
		}
	}

	gw := scrape(t, "gateway")
	if v, _ := value(gw, "linkmesh_http_requests_total", map[string]string{"route": "/:code", "method": "GET", "code": "302"}); v < 3 {
		t.Errorf("gateway counted %v redirects on route /:code, want ≥ 3", v)
	}
	for _, name := range []string{"linkmesh_redirect_cache_hits_total", "linkmesh_redirect_cache_misses_total", "linkmesh_redirect_cache_fills_total",
		"linkmesh_redirect_cache_entries", "linkmesh_click_queue_depth", "linkmesh_click_queue_capacity", "linkmesh_click_spool_bytes", "linkmesh_click_spool_capacity_bytes", "linkmesh_clicks_enqueued_total",
		"linkmesh_clicks_dropped_total", "linkmesh_clicks_published_total"} {
		if _, ok := value(gw, name, nil); !ok {
			t.Errorf("gateway exposes no %s", name)
		}
	}
	if v, _ := value(gw, "linkmesh_redirect_cache_hits_total", nil); v < 1 {
		t.Errorf("three visits of one code made %v cache hits", v)
	}
	if v, _ := value(gw, "linkmesh_clicks_enqueued_total", nil); v < 3 {
		t.Errorf("three visits enqueued %v clicks", v)
	}

	an := scrape(t, "analytics")
	clicks := map[string]string{"stream": "clicks", "group": "analytics"}
	for _, name := range []string{"linkmesh_stream_lag_entries", "linkmesh_stream_pending_entries", "linkmesh_stream_entries_processed_total", "linkmesh_stream_handler_errors_total"} {
		if _, ok := value(an, name, clicks); !ok {
			t.Errorf("analytics exposes no %s for the clicks stream", name)
		}
	}
	// The consumer counts each batch as it stores it: the counts reach the oldest click still
	// pending, or the time of the scrape when none is, and never lead the clock.
	v, ok := value(an, "linkmesh_clicks_counted_until_timestamp_seconds", nil)
	if !ok {
		t.Error("analytics exposes no linkmesh_clicks_counted_until_timestamp_seconds")
	} else if behind := time.Since(time.UnixMilli(int64(v * 1000))); behind < -time.Second || behind > time.Minute {
		t.Errorf("the counts include the clicks stored until %s ago, want at most a few seconds (a minute on a loaded machine)", behind.Round(time.Millisecond))
	}

	if v, _ := value(scrape(t, "quota"), "linkmesh_quota_decisions_total", map[string]string{"scope": "anonymous_create", "decision": "allowed"}); v < 1 {
		t.Errorf("quota counted %v allowed anonymous creations", v)
	}
	if v, _ := value(scrape(t, "auth"), "linkmesh_login_attempts_total", map[string]string{"method": "password", "result": "failure"}); v < 1 {
		t.Errorf("auth counted %v failed password logins", v)
	}
}
