package urlcheck

// ipv6Cases covers rules 4–5 for bracketed IPv6 literals, including the forms that embed an
// IPv4 address (mapped, compatible, IPv4-translated, NAT64, 6to4) and zone identifiers.
func ipv6Cases() []checkCase {
	return []checkCase{
		{"v6 loopback", "http://[::1]/", wantInternal},
		{"v6 loopback with port", "http://[::1]:8080/", wantInternal},
		{"v6 loopback long form", "http://[0:0:0:0:0:0:0:1]/", wantInternal},
		{"v6 unspecified", "http://[::]/", wantInternal},
		{"link-local", "http://[fe80::1]/", wantInternal},
		{"link-local upper case", "http://[FE80::1]/", wantInternal},
		{"link-local top of range", "http://[febf::1]/", wantInternal},
		{"link-local with zone", "http://[fe80::1%25eth0]/", wantInternal},
		{"loopback with zone", "http://[::1%25lo]:80/", wantInternal},
		{"site-local", "http://[fec0::1]/", wantInternal},
		{"unique local fc", "http://[fc00::1]/", wantInternal},
		{"unique local fd", "http://[fd12:3456:789a::1]/", wantInternal},
		{"v6 multicast", "http://[ff02::1]/", wantInternal},
		{"local-use nat64", "http://[64:ff9b:1::808:808]/", wantInternal},

		{"mapped loopback dotted", "http://[::ffff:127.0.0.1]/", wantInternal},
		{"mapped loopback hex", "http://[::ffff:7f00:1]/", wantInternal},
		{"mapped metadata", "http://[::ffff:169.254.169.254]/", wantInternal},
		{"mapped private long form", "http://[0:0:0:0:0:ffff:a00:1]/", wantInternal},
		{"compatible loopback", "http://[::127.0.0.1]/", wantInternal},
		{"compatible loopback hex", "http://[::7f00:1]/", wantInternal},
		{"compatible this network", "http://[::2]/", wantInternal},
		{"translated loopback", "http://[::ffff:0:7f00:1]/", wantInternal},
		{"nat64 loopback", "http://[64:ff9b::127.0.0.1]/", wantInternal},
		{"nat64 private hex", "http://[64:ff9b::a00:1]/", wantInternal},
		{"6to4 loopback", "http://[2002:7f00:1::]/", wantInternal},
		{"6to4 private", "http://[2002:c0a8:101::1]/", wantInternal},

		{"public v6", "http://[2606:4700::1]/", accepted},
		{"public v6 with port", "https://[2606:4700::1]:8443/x", accepted},
		{"mapped public", "http://[::ffff:8.8.8.8]/", accepted},
		{"compatible public", "http://[::8.8.8.8]/", accepted},
		{"nat64 public", "http://[64:ff9b::8.8.8.8]/", accepted},
		{"6to4 public", "http://[2002:808:808::1]/", accepted},
		{"zone on public", "http://[2606:4700::1%25eth0]/", wantHost},

		{"v4 in brackets", "http://[127.0.0.1]/", wantHost},
		{"unclosed bracket", "http://[::1/", wantHost},
		{"not hex", "http://[gg::1]/", wantHost},
		{"junk after bracket", "http://[::1]x/", wantHost},
		{"empty brackets", "http://[]/", wantHost},
		{"unbracketed v6", "http://::1/", wantNoHost},
		{"unbracketed v6 with prefix", "http://fe80::1/", wantPort},
	}
}
