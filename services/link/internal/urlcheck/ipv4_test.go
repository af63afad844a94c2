package urlcheck

import (
	"net/netip"
	"testing"
)

// TestParseIPv4 pins the WHATWG IPv4 parser on its own, including forms Check reaches only
// indirectly. want "" means the parser must fail.
func TestParseIPv4(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0x7F.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"1.65535", "1.0.255.255"},
		{"1.2.65535", "1.2.255.255"},
		{"1.16777215", "1.255.255.255"},
		{"0300.0250.0.1", "192.168.0.1"},
		{"0", "0.0.0.0"},
		{"0x", "0.0.0.0"},
		{"00", "0.0.0.0"},
		{"4294967295", "255.255.255.255"},
		{"1.2.65536", ""},
		{"1.16777216", ""},
		{"4294967296", ""},
		{"0x100000000", ""},
		{"99999999999999999999999999", ""},
		{"1.2.3.4.5", ""},
		{"256.0.0.1", ""},
		{"1.2.3.256", ""},
		{"08", ""},
		{"0x1g", ""},
		{"1..2", ""},
		{"a.1", ""},
		{"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := parseIPv4(tc.in)
			if tc.want == "" {
				if ok {
					t.Fatalf("parseIPv4(%q) = %v, want failure", tc.in, got)
				}
				return
			}
			if !ok || got != netip.MustParseAddr(tc.want) {
				t.Fatalf("parseIPv4(%q) = %v, %v; want %s", tc.in, got, ok, tc.want)
			}
		})
	}
}

func TestEndsInNumber(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"example.com", false},
		{"example.123", true},
		{"1.2.3.4.5", true},
		{"foo.0x7f", true},
		{"foo.0x", true},
		{"foo.0x1g", false},
		{"foo.08", true},
		{"1.2.3.4.", true},
		{"0x7f.example", false},
		{".", false},
	}
	for _, tc := range tests {
		if got := endsInNumber(tc.in); got != tc.want {
			t.Errorf("endsInNumber(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
