package urlcheck

import (
	"net/netip"
	"strings"
)

// The functions below implement the WHATWG URL standard's "ends in a number" test and IPv4
// parser (https://url.spec.whatwg.org/#concept-ipv4-parser), which accept everything
// inet_aton does: 2130706433, 0177.0.0.1, 0x7f.1, 127.1 and so on all mean 127.0.0.1 to a
// browser, so they must mean it here too. netip.ParseAddr knows only the dotted-quad form.

// endsInNumber reports whether host's last label is numeric, in which case a browser treats
// the whole host as an IPv4 address (or refuses it) instead of looking it up as a name.
func endsInNumber(host string) bool {
	parts := strings.Split(host, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

// parseIPv4 parses host as an IPv4 address in any WHATWG/inet_aton notation: one to four
// parts, each decimal, octal (leading 0) or hexadecimal (leading 0x); every part but the
// last is one byte and the last fills the remaining bytes.
func parseIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var nums [4]uint64
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	last := len(parts) - 1
	for _, n := range nums[:last] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	if nums[last] >= 1<<(8*(5-len(parts))) {
		return netip.Addr{}, false
	}
	ipv4 := nums[last]
	for i, n := range nums[:last] {
		ipv4 += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(ipv4 >> 24), byte(ipv4 >> 16), byte(ipv4 >> 8), byte(ipv4)}), true
}

// parseIPv4Number parses one part. Values too large for any position saturate instead of
// overflowing, so "0x100000000000000001" is out of range rather than wrapping to 1.
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	radix := uint64(10)
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		radix, s = 16, s[2:]
	case len(s) >= 2 && s[0] == '0':
		radix, s = 8, s[1:]
	}
	const saturated = 1 << 40 // above any valid part, far below overflow
	var n uint64
	for i := 0; i < len(s); i++ {
		d, ok := digitValue(s[i])
		if !ok || d >= radix {
			return 0, false
		}
		n = min(n*radix+d, saturated)
	}
	return n, true
}

// digitValue returns the value of a hexadecimal digit of either case.
func digitValue(c byte) (uint64, bool) {
	switch {
	case '0' <= c && c <= '9':
		return uint64(c - '0'), true
	case 'a' <= c && c <= 'f':
		return uint64(c-'a') + 10, true
	case 'A' <= c && c <= 'F':
		return uint64(c-'A') + 10, true
	}
	return 0, false
}
