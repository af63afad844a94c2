package testenv

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// DNS is a loopback DNS server, so lookups in tests never leave the machine: names in its
// records resolve (TTL 60 s; 0 for names starting with "rebind.", whose answer a test
// changes with Set), names starting with "slow." never get an answer, any other name is
// NXDOMAIN. It counts the queries it received.
type DNS struct {
	conn    net.PacketConn
	mu      sync.RWMutex
	records map[string][]netip.Addr
	queries atomic.Int64
}

// Set makes name answer addrs from now on.
func (d *DNS) Set(name string, addrs ...netip.Addr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.records[strings.TrimSuffix(strings.ToLower(name), ".")+"."] = addrs
}

// StartDNS starts a DNS server on a free loopback UDP port answering records (names with
// or without the final dot).
func StartDNS(records map[string][]netip.Addr) (*DNS, error) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d := &DNS{conn: conn, records: map[string][]netip.Addr{}}
	for name, addrs := range records {
		d.records[strings.TrimSuffix(strings.ToLower(name), ".")+"."] = addrs
	}
	go d.serve()
	return d, nil
}

// NewDNS is StartDNS for one test, stopped at its end.
func NewDNS(t testing.TB, records map[string][]netip.Addr) *DNS {
	t.Helper()
	d, err := StartDNS(records)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// Addr is the server's host:port.
func (d *DNS) Addr() string { return d.conn.LocalAddr().String() }

// Queries is how many queries arrived so far.
func (d *DNS) Queries() int64 { return d.queries.Load() }

// Close stops the server.
func (d *DNS) Close() { _ = d.conn.Close() }

func (d *DNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := d.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		d.queries.Add(1)
		if resp, ok := d.answer(buf[:n]); ok {
			_, _ = d.conn.WriteTo(resp, from)
		}
	}
}

func (d *DNS) answer(query []byte) ([]byte, bool) {
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
	d.mu.RLock()
	addrs, known := d.records[name]
	d.mu.RUnlock()
	ttl := uint32(60)
	if strings.HasPrefix(name, "rebind.") {
		ttl = 0
	}
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
		h := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: ttl}
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
