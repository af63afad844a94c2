package analytics

import (
	"strings"
	"testing"
	"time"
)

// A click survives the stream in the compact form and in the previous release's
// one-field-per-value form; damaged entries are refused, not guessed at.
func TestClickFieldsRoundTrip(t *testing.T) {
	c := Click{EventID: "e1", LinkID: "l1", OwnerID: "o1", ShortCode: "abc", ClickedAt: time.UnixMilli(1763900000123).UTC(),
		Country: "GB", Referrer: "news.example.com", DeviceType: DeviceMobile, Browser: "Mobile\tSafari", OS: "iOS", Visitor: "v"}
	got, err := ClickFromValues(c.Fields())
	want := c
	want.Browser = "Mobile Safari" // a tab cannot survive the compact form
	if err != nil || got != want {
		t.Fatalf("compact: %+v, %v", got, err)
	}
	// The wire form is fixed: gateways and analytics services of two releases share it.
	if got := string(c.AppendCompact([]byte("x"))); got != "x1\te1\tl1\to1\tabc\t1763900000123\tGB\tnews.example.com\tmobile\tMobile Safari\tiOS\tv" {
		t.Fatalf("compact form %q", got)
	}
	wide := map[string]string{}
	for k, v := range c.Values() {
		wide[k] = v.(string)
	}
	if len(wide) != 1 {
		t.Fatalf("values %v", wide)
	}
	old := map[string]string{"event": "e1", "link": "l1", "at": "1763900000123"}
	if got, err := ClickFromValues(old); err != nil || got.Country != Unknown || got.Referrer != Direct || got.LinkID != "l1" {
		t.Fatalf("wide form: %+v, %v", got, err)
	}
	for _, bad := range []map[string]string{
		{"c": "1\tonly\ttwo"}, {"c": "2" + c.Fields()["c"][1:]}, {"event": "e", "link": "l", "at": "x"}, {"link": "l", "at": "5"}, {},
		// Values no gateway sends, which the store could not keep or use as field names.
		{"event": "e", "link": "l", "at": "5", "browser": "Fire\x00fox"},
		{"event": "e", "link": "l", "at": "5", "referrer": "\xff\xfe"},
		{"event": "e", "link": "l", "at": "5", "os": strings.Repeat("x", 513)},
		{"event": "e", "link": "l", "at": "253402300800000"},
	} {
		if _, err := ClickFromValues(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
