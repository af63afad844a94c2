package urlcheck

import (
	"net/netip"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// host is a destination host after normalisation: either an IP address (possibly with an
// IPv6 zone) or a lower-case ASCII name without a trailing dot.
type host struct {
	name   string
	addr   netip.Addr
	isAddr bool
	// percentDecoded records that percent-escapes survived url.Parse and had to be decoded
	// to see what the host denotes.
	percentDecoded bool
}

// equal reports whether two hosts denote the same target, ignoring zones and IPv4-mapping
// so that [::ffff:127.0.0.1] matches a base of 127.0.0.1.
func (h host) equal(o host) bool {
	if h.isAddr != o.isAddr {
		return false
	}
	if h.isAddr {
		return h.addr.WithZone("").Unmap() == o.addr.WithZone("").Unmap()
	}
	return h.name != "" && h.name == o.name
}

// newProfile returns the IDNA profile browsers use (UTS #46 as the WHATWG URL standard
// configures it): non-transitional mapping with the Bidi and joiner checks, but without the
// STD3 and hyphen rules, so names like "my_host" or "r3---sn" stay valid as they are on the
// web. The mapping is what turns "１２７.０.０.１" or "127。0。0。1" into 127.0.0.1.
func newProfile() *idna.Profile {
	return idna.New(
		idna.MapForLookup(),
		idna.BidiRule(),
		idna.Transitional(false),
		idna.StrictDomainName(false),
		idna.CheckHyphens(false),
	)
}

// normaliseHost turns u's host into a host value, recognising IP addresses in every notation
// a browser accepts.
func (v *Validator) normaliseHost(u *url.URL) (host, *Error) {
	hostname := u.Hostname()
	if strings.HasPrefix(u.Host, "[") {
		// url.Parse has already decoded "%25" to "%" and validated the literal; netip keeps
		// the zone, which blocked ignores and check refuses.
		addr, err := netip.ParseAddr(hostname)
		if err != nil || !addr.Is6() {
			return host{}, fail(reasonHost)
		}
		return host{addr: addr, isAddr: true}, nil
	}
	return v.normaliseName(hostname)
}

// normaliseName applies, in order: percent-decoding of escapes url.Parse left (it decodes
// only non-ASCII bytes and "%25"), lower-casing, IDNA mapping to ASCII, removal of one
// trailing dot, and then the WHATWG rule that a host ending in a number is an IPv4 address
// or invalid — never a name to hand to DNS.
func (v *Validator) normaliseName(s string) (host, *Error) {
	var h host
	if strings.Contains(s, "%") {
		decoded, ok := percentDecodeAll(s)
		if !ok {
			return host{}, fail(reasonHost)
		}
		s, h.percentDecoded = decoded, true
	}
	// x/net/idna punycodes invalid bytes without complaint; only ToLower's substitution of
	// U+FFFD happens to make IDNA refuse them. Refuse them here instead of relying on that.
	if !utf8.ValidString(s) {
		return host{}, fail(reasonHost)
	}
	ascii, err := v.profile.ToASCII(strings.ToLower(s))
	if err != nil {
		return host{}, fail(reasonHost)
	}
	ascii = strings.TrimSuffix(strings.ToLower(ascii), ".")
	if !validName(ascii) {
		return host{}, fail(reasonHost)
	}
	if endsInNumber(ascii) {
		addr, ok := parseIPv4(ascii)
		if !ok {
			return host{}, fail(reasonHost)
		}
		h.addr, h.isAddr = addr, true
		return h, nil
	}
	h.name = ascii
	return h, nil
}

// percentDecodeAll decodes until no escape remains, so "%2531" is seen as "1" and not as
// a literal that a more lenient parser further along might decode differently.
func percentDecodeAll(s string) (string, bool) {
	for strings.Contains(s, "%") {
		d, err := url.PathUnescape(s)
		if err != nil || d == s {
			return "", false
		}
		s = d
	}
	return s, true
}

// validName accepts dot-separated, non-empty labels of lower-case letters, digits, hyphens
// and underscores. After IDNA mapping that is everything a real host name contains; the
// rest (e.g. "/" from a full-width solidus, or "!" that url.Parse lets through) are what
// browsers call forbidden domain code points or never resolve.
func validName(name string) bool {
	if name == "" {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// isLocalName reports whether name is one of the loopback names resolvers answer locally
// (from /etc/hosts or by RFC 6761 convention) regardless of DNS.
func isLocalName(name string) bool {
	switch name {
	case "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback":
		return true
	}
	return strings.HasSuffix(name, ".localhost")
}
