package urlcheck

// ipv4Cases covers rules 3–5 for IPv4: every notation browsers accept, host normalisation
// that produces an address, the blocked ranges at their edges, and invalid numeric hosts.
func ipv4Cases() []checkCase {
	return []checkCase{
		// One address, many spellings.
		{"loopback dotted", "http://127.0.0.1/", wantInternal},
		{"loopback with port", "http://127.0.0.1:8080/admin", wantInternal},
		{"loopback trailing dot", "http://127.0.0.1./", wantInternal},
		{"loopback decimal", "http://2130706433/", wantInternal},
		{"loopback octal dotted", "http://0177.0.0.1/", wantInternal},
		{"loopback octal single", "http://017700000001/", wantInternal},
		{"loopback hex dotted", "http://0x7f.0.0.1/", wantInternal},
		{"loopback hex single", "http://0x7f000001/", wantInternal},
		{"loopback hex upper", "http://0X7F000001/", wantInternal},
		{"loopback short two parts", "http://127.1/", wantInternal},
		{"loopback short three parts", "http://127.0.1/", wantInternal},
		{"loopback mixed hex short", "http://0x7f.1/", wantInternal},
		{"loopback octal trailing dot", "http://0177.0.0.1./", wantInternal},
		{"loopback other in range", "http://127.255.255.254/", wantInternal},
		{"private short form", "http://10.1/", wantInternal},
		{"private octal", "http://0300.0250.0.1/", wantInternal},
		{"metadata hex", "http://0xa9fea9fe/", wantInternal},
		{"metadata decimal", "http://2852039166/", wantInternal},
		{"zero", "http://0/", wantInternal},
		{"empty hex", "http://0x/", wantInternal},
		{"hex zero parts", "http://0x.0x.0x.0x/", wantInternal},

		// Range edges.
		{"this network", "http://0.0.0.0/", wantInternal},
		{"this network top", "http://0.255.255.255/", wantInternal},
		{"rfc1918 10", "http://10.0.0.1/", wantInternal},
		{"cgnat low", "http://100.64.0.1/", wantInternal},
		{"cgnat high", "http://100.127.255.255/", wantInternal},
		{"link-local metadata", "http://169.254.169.254/latest/meta-data/", wantInternal},
		{"rfc1918 172 low", "http://172.16.0.1/", wantInternal},
		{"rfc1918 172 high", "http://172.31.255.255/", wantInternal},
		{"ietf protocol", "http://192.0.0.8/", wantInternal},
		{"rfc1918 192", "http://192.168.1.1/", wantInternal},
		{"benchmark low", "http://198.18.0.1/", wantInternal},
		{"benchmark high", "http://198.19.255.255/", wantInternal},
		{"v4 multicast", "http://224.0.0.1/", wantInternal},
		{"multicast ssdp", "http://239.255.255.250/", wantInternal},
		{"reserved", "http://240.0.0.1/", wantInternal},
		{"broadcast", "http://255.255.255.255/", wantInternal},
		{"broadcast decimal", "http://4294967295/", wantInternal},

		// Just outside the ranges, and public addresses in odd notations.
		{"public dns", "http://8.8.8.8/", accepted},
		{"public hex", "http://0x08080808/", accepted},
		{"public decimal", "http://134744072/", accepted},
		{"after 172.16/12", "http://172.32.0.1/", accepted},
		{"after cgnat", "http://100.128.0.1/", accepted},
		{"after 192.0.0/24", "http://192.0.1.1/", accepted},
		{"before benchmark", "http://198.17.255.255/", accepted},
		{"before multicast", "http://223.255.255.255/", accepted},

		// Normalisation (rule 3) producing addresses.
		{"full-width digits", "http://１２７.０.０.１/", wantInternal},
		{"ideographic full stops", "http://127。0。0。1/", wantInternal},
		{"full-width full stops", "http://127．0．0．1/", wantInternal},
		{"circled digits", "http://①②⑦.0.0.1/", wantInternal},
		{"escaped circled digits", "http://%E2%91%A0%E2%91%A1%E2%91%A6.0.0.1/", wantInternal},
		{"escaped percent digit", "http://127.0.0.1%2531/", wantInternal},
		{"escaped percent all digits", "http://%2531%2532%2537.0.0.1/", wantInternal},
		{"ascii escapes in host", "http://%31%32%37.0.0.1/", wantHost},
		{"dangling escaped percent", "http://127.0.0.1%25/", wantHost},

		// Numeric last label that is not an address.
		{"five parts", "http://1.2.3.4.5/", wantHost},
		{"first part out of range", "http://256.1.1.1/", wantHost},
		{"last part out of range", "http://1.2.3.256/", wantHost},
		{"single number out of range", "http://4294967296/", wantHost},
		{"huge number", "http://0x100000000000000007f000001/", wantHost},
		{"bad octal digit", "http://08.0.0.1/", wantHost},
		{"name then number", "http://example.123/", wantHost},
		{"empty part", "http://127..1/", wantHost},
		{"two trailing dots", "http://127.0.0.1../", wantHost},
		{"bad hex last label is a name", "http://1.2.3.0x1g/", accepted},
	}
}
