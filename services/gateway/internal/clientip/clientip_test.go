package clientip

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"
)

func TestClientIP(t *testing.T) {
	r := NewResolver([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")})
	cases := []struct {
		name, peer, xff, want string
	}{
		{"untrusted peer ignores header", "203.0.113.9", "1.2.3.4", "203.0.113.9"},
		{"trusted peer, one hop", "10.0.0.2", "198.51.100.7", "198.51.100.7"},
		{"client forges leftmost entry", "10.0.0.2", "1.1.1.1, 198.51.100.7", "198.51.100.7"},
		{"chain of trusted proxies", "10.0.0.2", "198.51.100.7, 10.1.1.1, 10.2.2.2", "198.51.100.7"},
		{"trusted peer, no header", "10.0.0.2", "", "10.0.0.2"},
		{"garbage entry stops the walk", "10.0.0.2", "198.51.100.7, not-an-ip", "10.0.0.2"},
		{"all trusted", "10.0.0.2", "10.3.3.3", "10.3.3.3"},
		{"mapped peer", "::ffff:10.0.0.2", "198.51.100.7", "198.51.100.7"},
		{"ipv6 trusted", "fd00::1", "2001:db8::5", "2001:db8::5"},
	}
	for _, tc := range cases {
		got := r.ClientIP(netip.MustParseAddr(tc.peer), tc.xff)
		if got.String() != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestIPv6CountsPerSlash64(t *testing.T) {
	k := NewKeyer(strings.Repeat("s", 32))
	key := func(s string) string { return k.Key(netip.MustParseAddr(s)) }
	if key("2001:db8:1:2::1") != key("2001:db8:1:2:ffff:ffff:ffff:ffff") {
		t.Error("two addresses of one /64 must share a key")
	}
	if key("2001:db8:1:2::1") == key("2001:db8:1:3::1") {
		t.Error("different /64s must not share a key")
	}
	if key("::ffff:198.51.100.7") != key("198.51.100.7") || key("198.51.100.7") == key("198.51.100.8") {
		t.Error("IPv4 addresses (mapped or not) are keyed one by one")
	}
}

func TestKeyNeverContainsTheAddress(t *testing.T) {
	a := NewKeyer(strings.Repeat("s", 32))
	b := NewKeyer(strings.Repeat("t", 32))
	ip := netip.MustParseAddr("198.51.100.7")
	k := a.Key(ip)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(k) {
		t.Fatalf("unexpected key %q", k)
	}
	if k != a.Key(ip) {
		t.Fatal("key not stable")
	}
	if k == b.Key(ip) || k == a.Key(netip.MustParseAddr("198.51.100.8")) {
		t.Fatal("key does not depend on secret and address")
	}
}
