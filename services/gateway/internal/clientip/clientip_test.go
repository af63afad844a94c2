package clientip

import (
	"net/netip"
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

func TestKeyNeverContainsTheAddress(t *testing.T) {
	a := NewKeyer(strings.Repeat("s", 32))
	b := NewKeyer(strings.Repeat("t", 32))
	ip := netip.MustParseAddr("198.51.100.7")
	k := a.Key(ip)
	if len(k) != 64 || strings.Contains(k, "198") && strings.Contains(k, "51.100") {
		t.Fatalf("unexpected key %q", k)
	}
	if k != a.Key(ip) {
		t.Fatal("key not stable")
	}
	if k == b.Key(ip) || k == a.Key(netip.MustParseAddr("198.51.100.8")) {
		t.Fatal("key does not depend on secret and address")
	}
}
