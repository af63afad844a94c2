package e2e

import (
	"net"
	"net/netip"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeDNS is a loopback DNS server so the SSRF guard's lookups never leave the machine:
// names in records resolve, names starting with "slow." never get an answer, others NXDOMAIN.
type fakeDNS struct {
	conn    net.PacketConn
	records map[string][]netip.Addr
}

func startFakeDNS() (*fakeDNS, error) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &fakeDNS{conn: conn, records: map[string][]netip.Addr{
		"public.test.":   {netip.MustParseAddr("93.184.216.34")},
		"intranet.test.": {netip.MustParseAddr("10.1.2.3")},
		"mixed.test.":    {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("fd00::7")},
	}}
	go d.serve()
	return d, nil
}

func (d *fakeDNS) Addr() string { return d.conn.LocalAddr().String() }

func (d *fakeDNS) Close() { _ = d.conn.Close() }

func (d *fakeDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp, ok := d.answer(buf[:n]); ok {
			_, _ = d.conn.WriteTo(resp, from)
		}
	}
}

func (d *fakeDNS) answer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	hdr, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := strings.ToLower(q.Name.String())
	if strings.HasPrefix(name, "slow.") {
		return nil, false
	}
	addrs, known := d.records[name]
	rh := dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeSuccess}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	for _, a := range addrs {
		h := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
		switch {
		case a.Is4() && q.Type == dnsmessage.TypeA:
			_ = b.AResource(h, dnsmessage.AResource{A: a.As4()})
		case a.Is6() && q.Type == dnsmessage.TypeAAAA:
			_ = b.AAAAResource(h, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
	}
	resp, err := b.Finish()
	return resp, err == nil
}
