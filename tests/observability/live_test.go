package observability

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// redisDB is the Redis database of the stack this test starts: its analytics service joins
// the clicks stream's consumer group, which must not take the entries of other tests.
const redisDB = 14

// TestReferencedAgainstServices starts the six services with their metrics listeners against
// devstack's datastores, makes the traffic that brings every labelled family out (a creation,
// a redirect, a failed login, the clicks stream), scrapes all six, and wants every metric name
// the dashboards and rules use to be exposed, and the redirect histogram to have the 25 ms
// bucket the latency SLO counts.
func TestReferencedAgainstServices(t *testing.T) {
	mongoURI, redisURL, ok := stack.FromEnv()
	if !ok {
		if os.Getenv(testenv.EnvRequire) != "" {
			t.Fatal("datastores not set; run `make test`")
		}
		t.Skip("datastores not set (run `make test`)")
	}
	bin := os.Getenv("LINKMESH_BIN_DIR")
	if bin == "" {
		bin, _ = filepath.Abs(filepath.Join("..", "..", "bin"))
	}
	if err := stack.CheckBinaries(bin); err != nil {
		t.Fatal(err)
	}
	refs, err := Referenced(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	redisURL = stack.OwnRedisDB(t, redisURL, redisDB)
	prefix := testenv.Name("observability")
	t.Cleanup(func() { stack.DropDatabases(t, mongoURI, prefix) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	svcs, err := stack.StartServices(ctx, stack.ServicesOptions{
		BinDir: bin, MongoURI: mongoURI, RedisURL: redisURL, DatabasePrefix: prefix,
		LogDir: t.TempDir(), Metrics: true, Logger: slog.New(slog.DiscardHandler),
		Env: map[string]string{"OTEL_TRACES_EXPORTER": "none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svcs.Stop)

	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, path, body string, want int) string {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, svcs.GatewayURL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
		}
		return string(b)
	}
	created := send("POST", "/api/links/shorten", `{"url":"https://93.184.216.34/observability"}`, http.StatusCreated)
	var link struct {
		Code string `json:"short_code"`
	}
	if err := json.Unmarshal([]byte(created), &link); err != nil || link.Code == "" {
		t.Fatalf("no short_code in %s", created)
	}
	for range 2 {
		send("GET", "/"+link.Code, "", http.StatusFound)
	}
	send("POST", "/api/auth/login", `{"email":"nobody.`+prefix+`@example.com","password":"not-the-password-1"}`, http.StatusUnauthorized)

	// The clicks reach the stream in batches and the group's gauges appear once it exists:
	// scrape until nothing is missing, or give up after 30 s.
	var missing []string
	var exposed map[string]string
	deadline := time.Now().Add(30 * time.Second)
	for {
		exposed = map[string]string{}
		for _, svc := range stack.ServiceNames() {
			fams, err := scrape(ctx, svcs.MetricsURLs[svc])
			if err != nil {
				t.Fatalf("%s: %v", svc, err)
			}
			for name, f := range fams {
				exposed[name] = strings.ToLower(f.GetType().String())
			}
		}
		if missing = Missing(refs, exposed); len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, name := range missing {
		t.Errorf("%s is exposed by no service; used at %v", name, refs[name])
	}

	gw, err := scrape(ctx, svcs.MetricsURLs["gateway"])
	if err != nil {
		t.Fatal(err)
	}
	var bounds []float64
	for _, m := range gw["linkmesh_http_request_duration_seconds"].GetMetric() {
		for _, b := range m.GetHistogram().GetBucket() {
			if !slices.Contains(bounds, b.GetUpperBound()) {
				bounds = append(bounds, b.GetUpperBound())
			}
		}
	}
	if !slices.Contains(bounds, 0.025) {
		t.Errorf("linkmesh_http_request_duration_seconds has no le=\"0.025\" bucket (the latency SLO's); buckets %v", bounds)
	}
	t.Logf("%d referenced names, all exposed by the six services (%d families)", len(refs), len(exposed))
}

// scrape reads one /metrics answer.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}
