package clicks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
)

type fixedSalts []byte

func (f fixedSalts) Salt(string) ([]byte, error) { return f, nil }

type mapCountries map[netip.Addr]string

func (m mapCountries) Country(ip netip.Addr) string { return m[ip] }

func newTestEnricher(t *testing.T) *Enricher {
	t.Helper()
	e, err := NewEnricher(mapCountries{netip.MustParseAddr("81.2.69.142"): "GB"}, fixedSalts("salt"))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Crawlers and link-preview fetchers are no clicks: uap-core's list knows them.
func TestRobotsAreNoClicks(t *testing.T) {
	e := newTestEnricher(t)
	for _, ua := range []string{
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
		"Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
		"facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
		"Twitterbot/1.0",
		"Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
		"WhatsApp/2.23.20.0",
		"TelegramBot (like TwitterBot)",
		"LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36",
		"", // no browser sends no User-Agent
	} {
		if c, ok := enrich(t, e, Visit{LinkID: "l", Code: "c", At: time.Now(), UserAgent: ua}); ok {
			t.Errorf("%q recorded as a click: %+v", ua, c)
		}
	}
}

func TestBrowsersAreClicks(t *testing.T) {
	e := newTestEnricher(t)
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ua, device, browser, os string
	}{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", analytics.DeviceDesktop, "Chrome", "Windows"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1", analytics.DeviceMobile, "Mobile Safari", "iOS"},
		{"Mozilla/5.0 (iPad; CPU OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1", analytics.DeviceTablet, "Mobile Safari", "iOS"},
		{"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Mobile Safari/537.36", analytics.DeviceMobile, "Chrome Mobile", "Android"},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:120.0) Gecko/20100101 Firefox/120.0", analytics.DeviceDesktop, "Firefox", "Mac OS X"},
	} {
		c, ok := enrich(t, e, Visit{LinkID: "l1", OwnerID: "o1", Code: "abc", At: at, IP: netip.MustParseAddr("81.2.69.142"),
			UserAgent: tc.ua, Referer: "https://News.Example.com:8443/path?token=secret", EventID: "00112233445566778899aabbccddeeff"})
		if !ok {
			t.Fatalf("%q not recorded", tc.ua)
		}
		if c.DeviceType != tc.device || c.Browser != tc.browser || c.OS != tc.os {
			t.Errorf("%q → device %q browser %q os %q; want %q %q %q", tc.ua, c.DeviceType, c.Browser, c.OS, tc.device, tc.browser, tc.os)
		}
		if c.Country != "GB" || c.Referrer != "news.example.com" || c.LinkID != "l1" || c.OwnerID != "o1" ||
			c.ShortCode != "abc" || !c.ClickedAt.Equal(at) || c.EventID != "00112233445566778899aabbccddeeff" || len(c.Visitor) != 32 {
			t.Errorf("click %+v", c)
		}
	}
}

func TestCountry(t *testing.T) {
	e := newTestEnricher(t)
	gb := netip.MustParseAddr("81.2.69.142")
	for _, tc := range []struct {
		ip   netip.Addr
		edge string
		want string
	}{
		{gb, "", "GB"},
		{netip.MustParseAddr("10.0.0.1"), "", analytics.Unknown},
		{netip.MustParseAddr("10.0.0.1"), "de", "DE"}, // a trusted edge's header wins
		{gb, "XX", "GB"}, // the edge did not know
		{gb, "T1", "GB"}, // Tor is no country
		{gb, "<script>", "GB"},
	} {
		c, _ := enrich(t, e, Visit{LinkID: "l", At: time.Now(), IP: tc.ip, EdgeCountry: tc.edge, UserAgent: "Mozilla/5.0 Firefox/120.0"})
		if c.Country != tc.want {
			t.Errorf("ip %s edge %q → %q, want %q", tc.ip, tc.edge, c.Country, tc.want)
		}
	}
}

// Only the referring host is kept: a path or query may carry private tokens.
func TestReferrerHost(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      analytics.Direct,
		"https://www.google.com/search?q=x":     "www.google.com",
		"http://EXAMPLE.org.:80/a#frag":         "example.org",
		"https://user:pass@host.example/secret": "host.example",
		"https://[2001:db8::1]:8443/x":          "2001:db8::1",
		"android-app://com.slack":               analytics.Direct,
		"not a url":                             analytics.Direct,
		"/relative/path":                        analytics.Direct,
		"javascript:alert(1)":                   analytics.Direct,
	} {
		if got := ReferrerHost(in); got != want {
			t.Errorf("ReferrerHost(%q) = %q, want %q", in, got, want)
		}
	}
}

// A visitor is the same within a day across its IPv6 /64, and unlinkable across days.
type daySalts map[string][]byte

func (d daySalts) Salt(day string) ([]byte, error) { return d[day], nil }

func TestVisitorHash(t *testing.T) {
	ua := "Mozilla/5.0 Firefox/120.0"
	e, err := NewEnricher(nil, daySalts{"2026-11-23": []byte("salt-1"), "2026-11-24": []byte("salt-2")})
	if err != nil {
		t.Fatal(err)
	}
	day1, day2 := time.Date(2026, 11, 23, 23, 59, 0, 0, time.UTC), time.Date(2026, 11, 24, 0, 1, 0, 0, time.UTC)
	// Through the enricher's kept keyed hash, switching days back and forth.
	VisitorHash := func(at time.Time, ip netip.Addr, ua string) string {
		var out [visitorLen]byte
		if !e.visitor(at, ip, ua, &out) {
			t.Fatalf("no visitor for %s", at)
		}
		return string(out[:])
	}
	a := VisitorHash(day1, netip.MustParseAddr("2001:db8:1:2::1"), ua)
	if b := VisitorHash(day1, netip.MustParseAddr("2001:db8:1:2:ffff::9"), ua); a != b {
		t.Error("two addresses of one /64 are two visitors")
	}
	if b := VisitorHash(day1, netip.MustParseAddr("2001:db8:1:3::1"), ua); a == b {
		t.Error("two /64s are one visitor")
	}
	if b := VisitorHash(day2, netip.MustParseAddr("2001:db8:1:2::1"), ua); a == b {
		t.Error("a visitor is recognisable across days")
	}
	if b := VisitorHash(day1, netip.MustParseAddr("2001:db8:1:2::1"), ua+"x"); a == b {
		t.Error("two browsers behind one address are one visitor")
	}
	v4 := VisitorHash(day1, netip.MustParseAddr("192.0.2.1"), ua)
	if VisitorHash(day1, netip.MustParseAddr("::ffff:192.0.2.1"), ua) != v4 {
		t.Error("an IPv4-mapped address hashes apart from its IPv4 form")
	}
	// The hash is what it always was (gateways of two releases count one visitor once):
	// HMAC-SHA256 under the day's salt of the address's text, a zero byte and the
	// User-Agent, its first 16 bytes in hex.
	m := hmac.New(sha256.New, []byte("salt-1"))
	m.Write([]byte("192.0.2.1\x00" + ua))
	if want := hex.EncodeToString(m.Sum(nil)[:16]); v4 != want {
		t.Errorf("visitor hash %s, want %s", v4, want)
	}
}

// The click budget's client hash is the address alone: one for every User-Agent behind it
// (and the /64 of an IPv6 address), another for another address, apart from any visitor
// hash, and unlike it unmatched across days.
func TestClientHash(t *testing.T) {
	e, err := NewEnricher(nil, daySalts{"2026-11-23": []byte("salt-1"), "2026-11-24": []byte("salt-2")})
	if err != nil {
		t.Fatal(err)
	}
	day1, day2 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	click := func(at time.Time, ip, ua string) analytics.Click {
		var visitor, client [visitorLen]byte
		c, ok := e.click(Visit{EventID: "00112233445566778899aabbccddeeff", LinkID: "l", At: at, IP: netip.MustParseAddr(ip), UserAgent: ua}, &visitor, &client)
		if !ok {
			t.Fatal("no click")
		}
		return c
	}
	a := click(day1, "2001:db8:1:2::1", "Mozilla/5.0 Firefox/120.0")
	if len(a.Client) != 32 || a.Client == a.Visitor {
		t.Fatalf("client %q, visitor %q", a.Client, a.Visitor)
	}
	if b := click(day1, "2001:db8:1:2:ffff::9", "Mozilla/5.0 Chrome/131.0"); b.Client != a.Client || b.Visitor == a.Visitor {
		t.Error("another User-Agent behind one /64 is another client")
	}
	if b := click(day1, "2001:db8:1:3::1", "Mozilla/5.0 Firefox/120.0"); b.Client == a.Client {
		t.Error("two /64s are one client")
	}
	if b := click(day2, "2001:db8:1:2::1", "Mozilla/5.0 Firefox/120.0"); b.Client == a.Client {
		t.Error("a client is recognisable across days")
	}
}

type failingSalts struct{ calls int }

func (f *failingSalts) Salt(string) ([]byte, error) {
	f.calls++
	return nil, errors.New("redis unavailable")
}

// Without a salt a click still counts, without a visitor; the salt is not asked for again
// on every click while it cannot be had.
func TestClicksWithoutSalt(t *testing.T) {
	salts := &failingSalts{}
	e, err := NewEnricher(nil, salts)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		c, ok := enrich(t, e, Visit{LinkID: "l", EventID: "e", At: time.Now(), UserAgent: "Mozilla/5.0 Firefox/120.0"})
		if !ok || c.Visitor != "" {
			t.Fatalf("click %+v, %v", c, ok)
		}
	}
	if salts.calls != 1 {
		t.Fatalf("salt asked for %d times in a row, want 1", salts.calls)
	}
}

// The plain referers ReferrerHost reads directly get the answer url.Parse gives, over
// plain, odd and randomly damaged ones.
func TestReferrerHostFastPath(t *testing.T) {
	viaParse := func(referer string) string {
		if referer == "" || len(referer) > 4096 {
			return analytics.Direct
		}
		return parsedReferrerHost(referer)
	}
	seeds := []string{"https://www.google.com/search?q=x", "http://EXAMPLE.org.:80/a#frag", "https://user:pass@host.example/secret",
		"https://[2001:db8::1]:8443/x", "http://h:99/", "http://h:x/", "https://a..b/", "http://./", "https://host", "http://host?x#y",
		"https://t.co/%zz", "https://t.co/a b", "https://t.co/\x7f", "HTTPS://T.CO/", "https://münchen.de/", "https://h_1.example/",
		"https://" + strings.Repeat("a", 254) + "/", "https://" + strings.Repeat("a", 253) + "./", "ftp://x/", "https://x:/", "https://-x-/"}
	rng := rand.New(rand.NewPCG(7, 7))
	alphabet := "aZ09.-:/?#@[]%_ \t\x00\x7f\xc3\xbc"
	cases := append([]string(nil), seeds...)
	for range 20000 {
		b := []byte(seeds[rng.IntN(len(seeds))])
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(b) + 1)
			b = append(b[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
		}
		cases = append(cases, string(b))
	}
	for _, in := range cases {
		if got, want := ReferrerHost(in), viaParse(in); got != want {
			t.Fatalf("ReferrerHost(%q) = %q, url.Parse says %q", in, got, want)
		}
	}
}

// enrich is v's click as the stream carries it: AppendClick's value, read back (an event
// ID is made up where v has none).
func enrich(t testing.TB, e *Enricher, v Visit) (analytics.Click, bool) {
	t.Helper()
	if v.EventID == "" {
		v.EventID = "test-event"
	}
	b, ok := e.AppendClick(nil, v)
	if !ok {
		return analytics.Click{}, false
	}
	c, err := analytics.ClickFromValues(map[string]string{analytics.CompactField: string(b)})
	if err != nil {
		t.Fatalf("the click of %+v does not read back: %v", v, err)
	}
	return c, true
}
