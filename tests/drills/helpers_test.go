package drills

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// browser is a visitor whose visits count as clicks.
var browser = map[string]string{"User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"}

// follow has workers visitors follow GET /code, each visiting the gateways in turn and
// pausing between visits, every answer counted in rep under what, until the stop it returns
// is called; stop waits for them.
func follow(t *testing.T, rep *report, what, code string, gateways []string, workers int, pause time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				rep.send(t, what, gateways[(i+n)%len(gateways)], "GET", "/"+code, "", browser)
				time.Sleep(pause)
			}
		})
	}
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// warmUp visits each code once on gw, so that gw has it cached; anything but 302 ends the
// drill.
func warmUp(t *testing.T, gw string, codes ...string) {
	t.Helper()
	for _, code := range codes {
		if status, _ := send(t, gw, "GET", "/"+code, "", browser); status != 302 {
			t.Fatalf("warm-up of %s on %s: %d", code, gw, status)
		}
	}
}

// signUp registers email through the first gateway and returns the account with the
// headers of its requests from ip.
func signUp(t *testing.T, email, ip string) (stack.Account, map[string]string) {
	t.Helper()
	owner, err := stack.Register(context.Background(), bench.Services.GatewayURL, email)
	if err != nil {
		t.Fatal(err)
	}
	return owner, map[string]string{"Cookie": "go_session=" + owner.Session, "X-Forwarded-For": ip}
}

// gauge reads one of a process's metrics.
func gauge(t *testing.T, metricsURL, family string) float64 {
	t.Helper()
	v, err := stack.MetricValue(context.Background(), metricsURL, family)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// shorten creates a link to dest through gw for the caller header describes and returns its
// short code; any answer but 201 ends the drill.
func shorten(t *testing.T, gw, dest string, header map[string]string) string {
	t.Helper()
	status, body := send(t, gw, "POST", "/api/links/shorten", fmt.Sprintf(`{"url":%q}`, dest), header)
	var out struct {
		Code string `json:"short_code"`
	}
	if err := json.Unmarshal(body, &out); status != 201 || err != nil || out.Code == "" {
		t.Fatalf("shorten %s: %d %s", dest, status, body)
	}
	return out.Code
}

// storedClicks is the final count of code's clicks, once it can no longer change: it waits
// until every click answered is as far as it will get — no visit waiting in any gateway's
// spool, no entry of the clicks stream unread or unacknowledged by the analytics group —
// and then until the analytics counts reach past that moment (the fold adds a closed
// 10-second slot at a time, 15 s after it closes). Only then does it read the count, with
// header carrying the owner's session. A drill that lost clicks on purpose gets the count
// that is left. Not settling within wait ends the drill, saying where the clicks stood;
// want only appears in that message.
func storedClicks(t *testing.T, code string, want int64, wait time.Duration, header map[string]string) int64 {
	t.Helper()
	ctx := context.Background()
	metric := func(svc, family string) (float64, error) {
		return stack.MetricValue(ctx, bench.Services.MetricsURLs[svc], family)
	}
	// drained reports whether every click is stored, or what is still on its way.
	drained := func() string {
		for svc := range bench.Services.MetricsURLs {
			if !strings.HasPrefix(svc, "gateway") {
				continue
			}
			if v, err := metric(svc, "linkmesh_click_queue_depth"); err != nil || v != 0 {
				return fmt.Sprintf("%s spools %v visits (%v)", svc, v, err)
			}
		}
		// In this order: what was on the stream when its lag read 0 was delivered, and what
		// was delivered when pending read 0 was stored.
		for _, f := range []string{"linkmesh_stream_lag_entries", "linkmesh_stream_pending_entries"} {
			if v, err := metric("analytics", f); err != nil || v != 0 {
				return fmt.Sprintf("analytics: %s %v (%v)", f, v, err)
			}
		}
		return ""
	}
	var stored time.Time // every click is stored by then
	where := ""
	for deadline := time.Now().Add(wait); ; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the clicks of %s (%d answered) did not settle within %s: %s", code, want, wait, where)
		}
		if stored.IsZero() {
			if where = drained(); where != "" {
				continue
			}
			stored = time.Now()
		}
		until, err := metric("analytics", "linkmesh_clicks_counted_until_timestamp_seconds")
		if err == nil && time.UnixMilli(int64(until*1000)).After(stored) {
			break
		}
		where = fmt.Sprintf("every click stored at %s; the counts reach %v (%v)", stored.Format(time.RFC3339Nano), until, err)
	}
	// The count is the answer's: a failed read is no count of 0.
	var lastBody []byte
	for range 10 {
		// Today and yesterday (UTC): a drill may run across midnight.
		status, body := send(t, bench.Services.GatewayURL, "GET", "/api/user/links/"+code+"/analytics?days=2", "", header)
		var a struct {
			Total int64 `json:"total_clicks"`
		}
		if err := json.Unmarshal(body, &a); status == 200 && err == nil {
			return a.Total
		}
		lastBody = body
		t.Logf("analytics of %s answered %d %s; asking again", code, status, body)
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("analytics of %s never answered 200: %s", code, lastBody)
	return 0
}

// pipeline records in rep, under "pipeline", where the clicks stand at every step: each
// gateway's spool (visits taken, written to the stream, waiting, lost, crawlers) and the
// analytics consumer (entries handled, failed calls, dead letters, unread and unacknowledged
// entries). A drill whose counts disagree says so with where the clicks stopped.
func pipeline(rep *report) {
	snap := map[string]map[string]float64{}
	read := func(svc string, families ...string) {
		url, ok := bench.Services.MetricsURLs[svc]
		if !ok {
			return
		}
		m := map[string]float64{}
		for _, f := range families {
			v, err := stack.MetricValue(context.Background(), url, "linkmesh_"+f)
			if err != nil {
				m[f] = -1 // unreadable: the service is away, or the family not yet exposed
				continue
			}
			m[f] = v
		}
		snap[svc] = m
	}
	for svc := range bench.Services.MetricsURLs {
		if strings.HasPrefix(svc, "gateway") {
			read(svc, "clicks_enqueued_total", "clicks_published_total", "click_queue_depth", "clicks_dropped_total", "clicks_robots_total")
		}
	}
	read("analytics", "stream_entries_processed_total", "stream_handler_errors_total", "stream_entries_dead_lettered_total",
		"stream_lag_entries", "stream_pending_entries")
	rep.figure("pipeline", snap)
}
