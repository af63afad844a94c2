package urlcheck

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// FuzzCheck feeds arbitrary strings to Check. It must never panic, must only ever fail with
// a contract reason, and whatever it accepts must pass invariants that are re-derived here
// from net/url and net, independently of the package's own parsing and tables.
func FuzzCheck(f *testing.F) {
	for _, tc := range allCases() {
		f.Add(tc.raw)
	}
	r := &fakeResolver{answers: testAnswers()}
	v, err := New("https://sho.rt", r, time.Second)
	if err != nil {
		f.Fatal(err)
	}
	reasons := map[string]bool{
		reasonMalformed: true,
		wantRequired:    true, wantTooLong: true, wantSpaces: true, wantScheme: true,
		wantNoHost: true, wantCredentials: true, wantPort: true, wantHost: true,
		wantInternal: true, wantSelf: true,
	}
	f.Fuzz(func(t *testing.T, raw string) {
		err := v.Check(context.Background(), raw)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !reasons[e.Reason] {
				t.Fatalf("Check(%q) = %v, not a contract reason", raw, err)
			}
			return
		}
		assertAcceptable(t, raw)
	})
}

// assertAcceptable checks what must hold for every accepted URL.
func assertAcceptable(t *testing.T, raw string) {
	t.Helper()
	if len(raw) > MaxLength {
		t.Fatalf("accepted %d bytes, max %d", len(raw), MaxLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("accepted %q, but url.Parse fails: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		t.Fatalf("accepted %q with scheme %q", raw, u.Scheme)
	}
	if u.User != nil {
		t.Fatalf("accepted %q with user-info %q", raw, u.User)
	}
	hostname := u.Hostname()
	if hostname == "" {
		t.Fatalf("accepted %q without a host", raw)
	}
	name := strings.TrimSuffix(strings.ToLower(hostname), ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") || name == "sho.rt" {
		t.Fatalf("accepted %q with host %q", raw, hostname)
	}
	bare, _, _ := strings.Cut(hostname, "%")
	if addr, err := netip.ParseAddr(bare); err == nil && independentlyBlocked(addr) {
		t.Fatalf("accepted %q with internal address %v", raw, addr)
	}
}

// independentlyBlocked re-states the blocked ranges with net's own classification and CIDR
// parsing, rather than the package's prefix tables.
func independentlyBlocked(addr netip.Addr) bool {
	ip := net.IP(addr.AsSlice())
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	} else if e := embeddedForTest(ip); e != nil {
		ip = e
	}
	if ip.IsUnspecified() || ip.IsLoopback() || ip.IsPrivate() || ip.IsMulticast() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() {
		return true
	}
	for _, cidr := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4",
		"::/128", "fec0::/10", "64:ff9b:1::/48",
	} {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			panic(err)
		}
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// embeddedForTest returns the IPv4 address inside an IPv4-compatible (::a.b.c.d, other than
// :: and ::1), IPv4-translated (::ffff:0:a.b.c.d), NAT64 (64:ff9b::a.b.c.d) or 6to4
// (2002:aabb:ccdd::) address, or nil.
func embeddedForTest(ip net.IP) net.IP {
	zero := func(b []byte) bool { return strings.Trim(string(b), "\x00") == "" }
	switch {
	case zero(ip[:12]) && !ip.Equal(net.IPv6unspecified) && !ip.Equal(net.IPv6loopback):
		return net.IP(ip[12:16])
	case zero(ip[:8]) && ip[8] == 0xff && ip[9] == 0xff && zero(ip[10:12]):
		return net.IP(ip[12:16])
	case ip[0] == 0 && ip[1] == 0x64 && ip[2] == 0xff && ip[3] == 0x9b && zero(ip[4:12]):
		return net.IP(ip[12:16])
	case ip[0] == 0x20 && ip[1] == 0x02:
		return net.IP(ip[2:6])
	}
	return nil
}
