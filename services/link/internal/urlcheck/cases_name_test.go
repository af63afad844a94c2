package urlcheck

// nameCases covers rules 3 and 6–9 for host names: IDNA, invalid names, loopback names, the
// service's own host (base "https://sho.rt") and names resolved through the fake DNS.
func nameCases() []checkCase {
	return []checkCase{
		{"localhost", "http://localhost/", wantInternal},
		{"localhost upper", "http://LOCALHOST/", wantInternal},
		{"localhost trailing dot", "http://localhost./", wantInternal},
		{"localhost with port", "http://localhost:8080/", wantInternal},
		{"localhost subdomain", "http://foo.localhost/", wantInternal},
		{"localhost deep subdomain mixed case", "http://a.b.LocalHost./", wantInternal},
		{"localhost full-width", "http://ｌｏｃａｌｈｏｓｔ/", wantInternal},
		{"localhost.localdomain", "http://localhost.localdomain/", wantInternal},
		{"ip6-localhost", "http://ip6-localhost/", wantInternal},
		{"ip6-loopback", "http://IP6-LOOPBACK./", wantInternal},
		{"localhost two trailing dots", "http://localhost../", wantHost},
		{"localhost escaped", "http://%256c%256f%2563alhost/", wantInternal},
		{"name merely containing localhost", "http://notlocalhost.com/", accepted},
		{"localhost as first label", "http://localhost.com/", accepted},

		{"self", "https://sho.rt/abc", wantSelf},
		{"self other scheme and port", "http://sho.rt:8443/", wantSelf},
		{"self upper case trailing dot", "https://SHO.RT./", wantSelf},
		{"self full-width", "https://ｓｈｏ.ｒｔ/", wantSelf},
		{"self subdomain is another host", "https://www.sho.rt/", accepted},

		{"public name", "https://example.com/", accepted},
		{"public name full url", "http://example.com:8080/path?q=1#frag", accepted},
		{"unicode name", "https://münchen.de/", accepted},
		{"punycode name", "https://xn--mnchen-3ya.de/", accepted},
		{"underscore name", "https://my_host.example.com/", accepted},
		{"unresolvable name", "https://nxdomain.example/", accepted},
		{"single label name", "http://intranet/", accepted},
		{"resolves private", "https://internal.example.com/", wantInternal},
		{"resolves metadata", "http://metadata.example.com/", wantInternal},
		{"resolves public and private", "https://mixed.example.com/", wantInternal},
		{"resolves unique local", "https://v6ula.example.com/", wantInternal},
		{"resolves mapped loopback", "https://mapped.example.com/", wantInternal},
		{"resolves nat64 private", "https://nat64.example.com/", wantInternal},
		{"resolves v6 loopback", "https://loop6.example.com/", wantInternal},
		{"resolves public v6", "https://public6.example.com/", accepted},
		{"resolved name upper case", "https://INTERNAL.Example.COM./", wantInternal},

		{"escaped public name", "http://ex%2561mple.com/", wantHost},
		{"bad punycode", "http://xn--zz.com/", wantHost},
		{"empty label", "http://a..example.com/", wantHost},
		{"leading dot", "http://.example.com/", wantHost},
		{"bang in host", "http://a!b.example.com/", wantHost},
		{"angle bracket in host", "http://a<b.example.com/", wantHost},
		{"full-width solidus", "http://example.com／evil/", wantHost},
		{"invalid utf-8", "http://exa\xffmple.com/", wantHost},
		{"backslash in host", "http://example.com\\evil/", wantHost},
	}
}
