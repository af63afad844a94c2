package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// geoCountries is the e2e GeoIP database.
var geoCountries = map[string]string{"81.2.69.0/24": "GB", "2a02:2770::/32": "DE"}

// Client addresses the analytics test visits from; none may ever be stored.
var visitorIPs = []string{"81.2.69.10", "2a02:2770:1::1", "2a02:2770:1::2", "198.51.100.7"}

const (
	chromeWindows = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	safariIPhone  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1"
	firefoxLinux  = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
)

// 50 browser GETs, 10 HEADs and 10 crawler GETs make exactly 50 clicks, with the country
// of the GeoIP database, the referring host only, and the device, browser and OS of each
// User-Agent; the link's list entry and the owner's dashboard count them too.
func TestClickAnalytics(t *testing.T) {
	owner := register(t)
	r := as(t, owner.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/analytics"}`)
	if r.status != 201 {
		t.Fatalf("shorten: %d %s", r.status, r.body)
	}
	code := r.object(t)["short_code"].(string)
	visit := func(method, ip, ua, referer string) {
		t.Helper()
		h := map[string]string{"X-Forwarded-For": ip, "User-Agent": ua}
		if referer != "" {
			h["Referer"] = referer
		}
		if r := doWith(t, method, "/"+code, "", h); r.status != 302 {
			t.Fatalf("%s /%s: %d", method, code, r.status)
		}
	}
	for i := range 20 {
		visit("GET", "81.2.69.10", chromeWindows, fmt.Sprintf("https://News.Example.com/story?token=secret%d", i))
		visit("GET", visitorIPs[1+i%2], safariIPhone, "") // one household: one /64
	}
	for range 10 {
		visit("GET", "198.51.100.7", firefoxLinux, "https://t.co/abc")
		visit("HEAD", "81.2.69.10", chromeWindows, "")
	}
	for _, ua := range []string{
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
		"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
		"Twitterbot/1.0",
		"Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
		"WhatsApp/2.23.20.0",
		"TelegramBot (like TwitterBot)",
		"LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36",
		"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
	} {
		visit("GET", "81.2.69.10", ua, "https://news.example.com/")
	}

	var got analytics.LinkAnalytics
	deadline := time.Now().Add(90 * time.Second)
	for {
		r := as(t, owner.cookie, "GET", "/api/user/links/"+code+"/analytics?days=7", "")
		if r.status != 200 {
			t.Fatalf("analytics: %d %s", r.status, r.body)
		}
		got = analytics.LinkAnalytics{}
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatal(err)
		}
		if got.TotalClicks >= 50 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	// A little longer: nothing beyond the 50 may arrive.
	time.Sleep(2 * time.Second)
	r = as(t, owner.cookie, "GET", "/api/user/links/"+code+"/analytics?days=7", "")
	got = analytics.LinkAnalytics{}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	if got.TotalClicks != 50 || got.UniqueVisitors != 3 || got.ShortCode != code || got.To != today || len(got.Timeseries) != 7 {
		t.Fatalf("analytics %s", r.body)
	}
	last := got.Timeseries[6]
	if last.Date != today || last.Clicks != 50 || last.UniqueVisitors != 3 || got.Timeseries[0].Clicks != 0 {
		t.Fatalf("timeseries %+v", got.Timeseries)
	}
	for name, pair := range map[string][2]string{
		"countries":         {fmt.Sprint(got.Countries), "[{DE 20} {GB 20} {Unknown 10}]"},
		"referrers":         {fmt.Sprint(got.Referrers), "[{direct 20} {news.example.com 20} {t.co 10}]"},
		"devices":           {fmt.Sprint(got.Devices), "[{desktop 30} {mobile 20}]"},
		"browsers":          {fmt.Sprint(got.Browsers), "[{Chrome 20} {Mobile Safari 20} {Firefox 10}]"},
		"operating_systems": {fmt.Sprint(got.OperatingSystems), "[{Windows 20} {iOS 20} {Linux 10}]"},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s = %s, want %s", name, pair[0], pair[1])
		}
	}
	if strings.Contains(string(r.body), "token") || strings.Contains(string(r.body), "secret") {
		t.Errorf("a referrer's path or query reached the answer: %s", r.body)
	}

	checkExport(t, owner.cookie, code, got)

	list := as(t, owner.cookie, "GET", "/api/user/links", "").object(t)
	if n := list["links"].([]any)[0].(map[string]any)["click_count"]; n != float64(50) {
		t.Errorf("list click_count = %v, want 50", n)
	}
	if n := as(t, owner.cookie, "GET", "/api/user/dashboard", "").object(t)["total_clicks"]; n != float64(50) {
		t.Errorf("dashboard total_clicks = %v, want 50", n)
	}
	// Only the owner gets an answer; days are checked.
	other := register(t)
	as(t, other.cookie, "GET", "/api/user/links/"+code+"/analytics", "").wantError(t, 404, "short link not found")
	as(t, owner.cookie, "GET", "/api/user/links/"+code+"/analytics?days=0", "").wantError(t, 400, "days must be an integer between 1 and 365")
	as(t, owner.cookie, "GET", "/api/user/links/"+code+"/analytics?days=366", "").wantError(t, 400, "days must be an integer between 1 and 365")
}

// scanForClientIPs looks through every document of every service database, every entry of
// the clicks stream and every span exported for a client address the tests used.
func scanForClientIPs(ctx context.Context) error {
	needles := append([]string{"198.18."}, visitorIPs...)
	// The API token secrets, and their random part alone, must be nowhere either.
	for _, s := range issuedSecrets {
		needles = append(needles, s, strings.TrimPrefix(strings.TrimPrefix(s, "lm_"), "whsec_"))
	}
	return scanStores(ctx, needles, true)
}

// scanStores looks for every needle in every document of every service's database, and,
// with traces, in the clicks stream and every span exported: it returns where it found one.
func scanStores(ctx context.Context, needles []string, traces bool) error {
	mc, err := mongo.Connect(options.Client().ApplyURI(mongoURI))
	if err != nil {
		return err
	}
	defer func() { _ = mc.Disconnect(context.Background()) }()
	found := func(where, text string) error {
		for _, n := range needles {
			if strings.Contains(text, n) {
				return fmt.Errorf("%s found in %s: %.300s", n, where, text)
			}
		}
		return nil
	}
	for _, svc := range stack.ServiceNames() {
		db := mc.Database(dbPrefix + "_" + svc)
		colls, err := db.ListCollectionNames(ctx, bson.D{})
		if err != nil {
			return err
		}
		for _, coll := range colls {
			cur, err := db.Collection(coll).Find(ctx, bson.D{})
			if err != nil {
				return err
			}
			for cur.Next(ctx) {
				if err := found(svc+"."+coll, cur.Current.String()); err != nil {
					return err
				}
			}
			if err := cur.Err(); err != nil {
				return err
			}
		}
	}
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	xs, err := rdb.XRange(ctx, analytics.Stream, "-", "+").Result()
	if err != nil {
		return err
	}
	for _, x := range xs {
		if err := found("the clicks stream", fmt.Sprint(x.Values)); err != nil {
			return err
		}
	}
	if !traces {
		return nil
	}
	for _, sp := range otlp.all() {
		if err := found("a span of "+sp.service, sp.String()); err != nil {
			return err
		}
	}
	return nil
}

// One client visiting one link 40 times, under two User-Agents, is redirected every time
// but counted 30 times (the click budget); another client's visits count in full, and the
// visits beyond the budget are a metric.
func TestClickInflationIsNotCounted(t *testing.T) {
	owner := register(t)
	r := as(t, owner.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/inflated"}`)
	if r.status != 201 {
		t.Fatalf("shorten: %d %s", r.status, r.body)
	}
	code := r.object(t)["short_code"].(string)
	// Summed over the analytics replicas: any of them may take the clicks.
	overBudget := func() float64 {
		var sum float64
		for name := range services.MetricsURLs {
			if strings.HasPrefix(name, "analytics") {
				v, _ := value(scrape(t, name), "linkmesh_clicks_over_budget_total", nil)
				sum += v
			}
		}
		return sum
	}
	before := overBudget()
	inflater, honest := newClientIP(), newClientIP()
	for i := range 40 {
		ua := chromeWindows
		if i%2 == 1 {
			ua = firefoxLinux
		}
		if r := doWith(t, "GET", "/"+code, "", map[string]string{"X-Forwarded-For": inflater, "User-Agent": ua}); r.status != 302 {
			t.Fatalf("visit %d: %d", i, r.status)
		}
	}
	for i := range 5 {
		if r := doWith(t, "GET", "/"+code, "", map[string]string{"X-Forwarded-For": honest, "User-Agent": safariIPhone}); r.status != 302 {
			t.Fatalf("honest visit %d: %d", i, r.status)
		}
	}
	deadline := time.Now().Add(90 * time.Second)
	var over float64
	for {
		over = overBudget()
		if over-before >= 10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	var got analytics.LinkAnalytics
	for {
		r := as(t, owner.cookie, "GET", "/api/user/links/"+code+"/analytics?days=7", "")
		got = analytics.LinkAnalytics{}
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatal(err)
		}
		if got.TotalClicks >= 35 || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	time.Sleep(time.Second) // nothing beyond may arrive
	r = as(t, owner.cookie, "GET", "/api/user/links/"+code+"/analytics?days=7", "")
	got = analytics.LinkAnalytics{}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if got.TotalClicks != 35 || over-before != 10 {
		t.Fatalf("%d clicks counted, %v over budget; want 30 + 5 and 10", got.TotalClicks, over-before)
	}
}
