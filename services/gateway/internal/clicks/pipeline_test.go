package clicks

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

func TestGeoIPReadsBothLayouts(t *testing.T) {
	for _, layout := range []testenv.GeoIPLayout{testenv.GeoIPMaxMind, testenv.GeoIPLocationDB} {
		g, err := OpenGeoIP(testenv.WriteGeoIP(t, layout, map[string]string{"81.2.69.0/24": "GB", "2a02:2770::/32": "NL"}))
		if err != nil {
			t.Fatal(err)
		}
		for ip, want := range map[string]string{"81.2.69.142": "GB", "::ffff:81.2.69.1": "GB", "2a02:2770:1::1": "NL", "8.8.8.8": ""} {
			if got := g.Country(netip.MustParseAddr(ip)); got != want {
				t.Errorf("layout %d: %s → %q, want %q", layout, ip, got, want)
			}
		}
		if got := g.Country(netip.Addr{}); got != "" {
			t.Errorf("invalid address → %q", got)
		}
		_ = g.Close()
	}
	if _, err := OpenGeoIP("/nonexistent.mmdb"); err == nil {
		t.Fatal("a missing database opened")
	}
}

// Every replica uses the same salt for a day, and the salt dies shortly after its day.
func TestRedisSaltsAreSharedAndExpire(t *testing.T) {
	rdb := testenv.Redis(t)
	day := time.Now().UTC().Format(time.DateOnly)
	a, err := NewRedisSalts(rdb).Salt(day)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRedisSalts(rdb).Salt(day)
	if err != nil || string(a) != string(b) || len(a) != 32 {
		t.Fatalf("replicas got %x and %x (%v)", a, b, err)
	}
	start, _ := time.Parse(time.DateOnly, day)
	ttl := rdb.PTTL(context.Background(), saltKeyPrefix+day).Val()
	if until := time.Until(start.Add(24*time.Hour + saltGrace)); ttl <= 0 || ttl > until+time.Second {
		t.Fatalf("salt lives %s more, want about %s", ttl, until)
	}
	// A day long gone has no salt to give: its hashes can no longer be recomputed.
	if s, err := NewRedisSalts(rdb).Salt("2020-01-01"); err == nil {
		t.Fatalf("a destroyed day's salt came back: %x", s)
	}
}

// A full queue drops and counts instead of blocking; what was taken reaches the stream,
// crawlers do not, and stopping flushes everything taken.
func TestRecorderQueuesEnrichesAndFlushes(t *testing.T) {
	rdb := testenv.Redis(t)
	streamName := testenv.Name("clicks")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := NewEnricher(nil, NewRedisSalts(rdb))
	if err != nil {
		t.Fatal(err)
	}
	p, err := stream.NewProducer(stream.ProducerOptions{Client: rdb, Stream: streamName, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorder(RecorderOptions{QueueSize: 10, SpoolSize: minSpool, Enricher: e, Producer: p, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	browser := Visit{LinkID: "l1", Code: "abc", At: time.Now(), IP: netip.MustParseAddr("192.0.2.1"), UserAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"}
	bot := browser
	bot.UserAgent = "Twitterbot/1.0"
	for range 8 {
		r.Record(browser)
	}
	r.Record(bot)
	r.Record(bot)
	r.Record(browser) // the queue holds 10
	if r.Accepted() != 10 || r.Dropped() != 1 {
		t.Fatalf("accepted %d dropped %d, want 10 and 1", r.Accepted(), r.Dropped())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	cancel()
	<-done
	xs, err := rdb.XRange(context.Background(), streamName, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range xs {
		for _, v := range x.Values {
			if strings.Contains(v.(string), "192.0.2.1") {
				t.Fatalf("the client address reached the stream: %v", x.Values)
			}
		}
	}
	clicks := streamClicks(t, rdb, streamName)
	if len(clicks) != 8 || r.Robots() != 2 || len(xs) != 1 {
		t.Fatalf("stream holds %d clicks in %d entries, robots %d; want 8 in one entry, and 2", len(clicks), len(xs), r.Robots())
	}
	for _, c := range clicks {
		if c.LinkID != "l1" || c.Browser != "Firefox" || c.Visitor == "" {
			t.Fatalf("click %+v", c)
		}
	}
}

// streamClicks reads every click on the stream name.
func streamClicks(t testing.TB, rdb redis.UniversalClient, name string) []analytics.Click {
	t.Helper()
	xs, err := rdb.XRange(context.Background(), name, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var clicks []analytics.Click
	for _, x := range xs {
		vals := map[string]string{}
		for k, v := range x.Values {
			vals[k] = v.(string)
		}
		cs, err := analytics.ClicksFromValues(vals)
		if err != nil {
			t.Fatalf("entry %v: %v", x.Values, err)
		}
		clicks = append(clicks, cs...)
	}
	return clicks
}

// The database `make run` fetches (ip-location-db's, in its own layout) answers real
// addresses. `make test` fetches it and names it in LINKMESH_TEST_GEOIP_DB.
func TestBundledGeoIPDatabase(t *testing.T) {
	path := os.Getenv("LINKMESH_TEST_GEOIP_DB")
	if path == "" {
		if os.Getenv(testenv.EnvRequire) != "" {
			t.Fatal("LINKMESH_TEST_GEOIP_DB not set; run `make test`")
		}
		t.Skip("LINKMESH_TEST_GEOIP_DB not set")
	}
	g, err := OpenGeoIP(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	// Twice: the second answers come from the countries kept by record.
	for range 2 {
		for ip, want := range map[string]string{"8.8.8.8": "US", "81.2.69.142": "GB", "2001:4860:4860::8888": "US",
			"8.8.4.4": "US", "2a00:1450:4009::1": "IE", "127.0.0.1": "", "10.1.2.3": ""} {
			if got := g.Country(netip.MustParseAddr(ip)); got != want {
				t.Errorf("%s → %q, want %q", ip, got, want)
			}
		}
	}
}
