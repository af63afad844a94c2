package urlcheck

import "net/netip"

// blockedV4 lists IPv4 ranges that are not public unicast destinations: addresses a browser
// would use to reach the clicker's own machine, its local network, its provider's internal
// network, or nothing sensible at all.
var blockedV4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network"; 0.0.0.0 reaches localhost on many systems
	netip.MustParsePrefix("10.0.0.0/8"),         // RFC 1918 private
	netip.MustParsePrefix("100.64.0.0/10"),      // RFC 6598 carrier-grade NAT
	netip.MustParsePrefix("127.0.0.0/8"),        // loopback
	netip.MustParsePrefix("169.254.0.0/16"),     // link-local, incl. cloud metadata 169.254.169.254
	netip.MustParsePrefix("172.16.0.0/12"),      // RFC 1918 private
	netip.MustParsePrefix("192.0.0.0/24"),       // IETF protocol assignments
	netip.MustParsePrefix("192.168.0.0/16"),     // RFC 1918 private
	netip.MustParsePrefix("198.18.0.0/15"),      // benchmarking
	netip.MustParsePrefix("224.0.0.0/4"),        // multicast
	netip.MustParsePrefix("240.0.0.0/4"),        // reserved
	netip.MustParsePrefix("255.255.255.255/32"), // limited broadcast (inside 240/4; listed for clarity)
}

// blockedV6 lists IPv6 ranges blocked outright. IPv6 forms that embed an IPv4 address are
// handled by embeddedV4 instead, so that they are blocked exactly when the IPv4 is.
var blockedV6 = []netip.Prefix{
	netip.MustParsePrefix("::/128"),         // unspecified
	netip.MustParsePrefix("::1/128"),        // loopback
	netip.MustParsePrefix("fe80::/10"),      // link-local
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local, still routed internally
	netip.MustParsePrefix("fc00::/7"),       // unique local
	netip.MustParsePrefix("ff00::/8"),       // multicast
	netip.MustParsePrefix("64:ff9b:1::/48"), // RFC 8215 local-use NAT64: internal by definition
}

// Prefixes whose addresses carry an IPv4 address a gateway or host may translate to.
var (
	compatPrefix   = netip.MustParsePrefix("::/96")           // IPv4-compatible (deprecated)
	nat64Prefix    = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052 well-known NAT64
	siitPrefix     = netip.MustParsePrefix("::ffff:0:0:0/96") // RFC 2765 IPv4-translated
	sixToFourRange = netip.MustParsePrefix("2002::/16")       // RFC 3056 6to4
)

// blocked reports whether a is a private, internal or otherwise non-public address. The
// zone is ignored (it only selects an interface) and IPv4-mapped addresses are unmapped, so
// every spelling of an IPv4 address is judged as that address.
func blocked(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return inAny(blockedV4, a)
	}
	if inAny(blockedV6, a) {
		return true
	}
	if v4, ok := embeddedV4(a); ok {
		return inAny(blockedV4, v4)
	}
	return false
}

// embeddedV4 extracts the IPv4 address carried by an IPv4-compatible, NAT64, IPv4-translated
// or 6to4 address.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case compatPrefix.Contains(a), nat64Prefix.Contains(a), siitPrefix.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFourRange.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

func inAny(prefixes []netip.Prefix, a netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Blocked reports whether a is a private, internal or otherwise non-public address: what
// a destination may not point to, and what a webhook delivery may not connect to.
func Blocked(a netip.Addr) bool { return blocked(a) }
