package urlcheck

import (
	"net/netip"
	"testing"
)

// TestBlocked checks every listed range at both ends and just outside, so that a range
// dropped from or narrowed in the tables fails here even if no Check row hits its edge.
func TestBlocked(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"0.0.0.0", true}, {"0.255.255.255", true}, {"1.0.0.0", false},
		{"9.255.255.255", false}, {"10.0.0.0", true}, {"10.255.255.255", true}, {"11.0.0.0", false},
		{"100.63.255.255", false}, {"100.64.0.0", true}, {"100.127.255.255", true}, {"100.128.0.0", false},
		{"126.255.255.255", false}, {"127.0.0.0", true}, {"127.255.255.255", true}, {"128.0.0.0", false},
		{"169.253.255.255", false}, {"169.254.0.0", true}, {"169.254.255.255", true}, {"169.255.0.0", false},
		{"172.15.255.255", false}, {"172.16.0.0", true}, {"172.31.255.255", true}, {"172.32.0.0", false},
		{"191.255.255.255", false}, {"192.0.0.0", true}, {"192.0.0.255", true}, {"192.0.1.0", false},
		{"192.167.255.255", false}, {"192.168.0.0", true}, {"192.168.255.255", true}, {"192.169.0.0", false},
		{"198.17.255.255", false}, {"198.18.0.0", true}, {"198.19.255.255", true}, {"198.20.0.0", false},
		{"223.255.255.255", false}, {"224.0.0.0", true}, {"239.255.255.255", true},
		{"240.0.0.0", true}, {"255.255.255.254", true}, {"255.255.255.255", true},

		{"::", true}, {"::1", true}, {"::2", true}, {"::1:0:0:0", false},
		{"fe7f:ffff::", false}, {"fe80::", true}, {"febf:ffff::", true},
		{"fec0::", true}, {"feff:ffff::", true},
		{"fbff:ffff::", false}, {"fc00::", true}, {"fdff:ffff::", true},
		{"ff00::", true}, {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
		{"fe80::1%eth0", true},
		{"2606:4700::1", false}, {"2001:4860:4860::8888", false},

		{"::ffff:10.0.0.1", true}, {"::ffff:8.8.8.8", false},
		{"::10.0.0.1", true}, {"::8.8.8.8", false},
		{"::ffff:0:10.0.0.1", true}, {"::ffff:0:8.8.8.8", false},
		{"64:ff9b::10.0.0.1", true}, {"64:ff9b::8.8.8.8", false},
		{"64:ff9b:1::8.8.8.8", true},
		{"2002:0a00:0001::", true}, {"2002:0808:0808::", false},
		{"2002:c0a8:0001:ffff::1", true},
	}
	for _, tc := range tests {
		addr := netip.MustParseAddr(tc.addr)
		if got := blocked(addr); got != tc.want {
			t.Errorf("blocked(%s) = %v, want %v", tc.addr, got, tc.want)
		}
		// The fuzz oracle must agree, or FuzzCheck would check the wrong thing.
		if got := independentlyBlocked(addr.WithZone("")); got != tc.want {
			t.Errorf("independentlyBlocked(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}
