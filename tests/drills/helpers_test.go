package drills

import (
	"context"
	"encoding/json"
	"fmt"
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

// storedClicks waits, up to wait, until the clicks stored for code reach want, then a
// moment more for any beyond it, and returns how many are stored; header carries the
// owner's session.
// settle is how long a click count must stand still to be final: the analytics service folds
// clicks into the counts a closed 10-second slot at a time, so two folds and some.
const settle = 25 * time.Second

func storedClicks(t *testing.T, code string, want int64, wait time.Duration, header map[string]string) int64 {
	t.Helper()
	var lastBody []byte
	read := func() (int, int64) {
		status, body := send(t, bench.Services.GatewayURL, "GET", "/api/user/links/"+code+"/analytics?days=1", "", header)
		var a struct {
			Total int64 `json:"total_clicks"`
		}
		_ = json.Unmarshal(body, &a)
		lastBody = body
		return status, a.Total
	}
	// Until every click is there, or until the count has stood still for settle with nothing
	// left unread on the stream: a drill may have lost some on purpose.
	last, still := int64(-1), 0
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(time.Second) {
		status, got := read()
		if status == 200 && got >= want {
			break
		}
		if got == last {
			still++
		} else {
			last, still = got, 0
		}
		if lag, err := stack.MetricValue(context.Background(), bench.Services.MetricsURLs["analytics"], "linkmesh_stream_lag_entries"); still >= int(settle/time.Second) && err == nil && lag == 0 {
			break
		}
	}
	time.Sleep(2 * time.Second)
	// The count is the answer's: a failed read is no count of 0.
	for range 10 {
		status, got := read()
		if status == 200 {
			return got
		}
		t.Logf("analytics of %s answered %d %s; asking again", code, status, lastBody)
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("analytics of %s never answered 200: %s", code, lastBody)
	return 0
}
