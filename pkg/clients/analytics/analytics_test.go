package analytics

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A click survives the stream in the compact form and in the previous release's
// one-field-per-value form; damaged entries are refused, not guessed at.
func TestClickFieldsRoundTrip(t *testing.T) {
	c := Click{EventID: "e1", LinkID: "l1", OwnerID: "o1", ShortCode: "abc", ClickedAt: time.UnixMilli(1763900000123).UTC(),
		Country: "GB", Referrer: "news.example.com", DeviceType: DeviceMobile, Browser: "Mobile\tSafari", OS: "iOS", Visitor: "v", Client: "k"}
	got, err := ClickFromValues(c.Fields())
	want := c
	want.Browser = "Mobile Safari" // a tab cannot survive the compact form
	if err != nil || got != want {
		t.Fatalf("compact: %+v, %v", got, err)
	}
	// The wire form is fixed: gateways and analytics services of two releases share it.
	if got := string(c.AppendCompact([]byte("x"))); got != "x2\te1\tl1\to1\tabc\t1763900000123\tGB\tnews.example.com\tmobile\tMobile Safari\tiOS\tv\tk" {
		t.Fatalf("compact form %q", got)
	}
	// The previous release's compact form, without the client, still reads.
	v1 := "1\te1\tl1\to1\tabc\t1763900000123\tGB\tnews.example.com\tmobile\tMobile Safari\tiOS\tv"
	if got, err := ClickFromValues(map[string]string{"c": v1}); err != nil || got.Visitor != "v" || got.Client != "" || got.OS != "iOS" {
		t.Fatalf("version 1: %+v, %v", got, err)
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
		{"c": "1\tonly\ttwo"}, {"c": "3" + c.Fields()["c"][1:]}, {"c": "1" + c.Fields()["c"][1:]}, {"c": v1[:len(v1)-2]}, {"event": "e", "link": "l", "at": "x"}, {"link": "l", "at": "5"}, {},
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

// An entry packs clicks one per line; a damaged line costs only itself, and no entry yields
// more than MaxPerEntry clicks.
func TestClicksFromPackedValues(t *testing.T) {
	click := func(i int) Click {
		return Click{EventID: fmt.Sprintf("e%d", i), LinkID: "l1", ClickedAt: time.UnixMilli(1763900000123).UTC(),
			Country: "GB", Referrer: "a\nb", DeviceType: DeviceDesktop, Browser: "Firefox", OS: "Linux"}
	}
	var b []byte
	for i := range 3 {
		if i > 0 {
			b = append(b, '\n')
		}
		b = click(i).AppendCompact(b)
		if i == 1 {
			b = append(b, "\n1\tbroken"...)
		}
	}
	got, err := ClicksFromValues(map[string]string{CompactField: string(b)})
	if err == nil || len(got) != 3 || got[2].EventID != "e2" || got[0].Referrer != "a b" {
		t.Fatalf("packed: %+v, %v; want 3 clicks and the broken line's error", got, err)
	}
	b = b[:0]
	for i := range MaxPerEntry + 5 {
		if i > 0 {
			b = append(b, '\n')
		}
		b = click(i).AppendCompact(b)
	}
	if got, err := ClicksFromValues(map[string]string{CompactField: string(b)}); err == nil || len(got) != MaxPerEntry {
		t.Fatalf("an entry of %d lines gave %d clicks, %v", MaxPerEntry+5, len(got), err)
	}
	if got, err := ClicksFromValues(map[string]string{"event": "e", "link": "l", "at": "5"}); err != nil || len(got) != 1 {
		t.Fatalf("wide form: %+v, %v", got, err)
	}
}
