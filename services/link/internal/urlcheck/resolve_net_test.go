package urlcheck

import (
	"context"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// stalledDNS is a DNS server on 127.0.0.1 that never gives an answer: over UDP it keeps
// silent or, with truncate, replies empty and truncated so that the resolver asks again
// over TCP, where it accepts the connection and never answers.
type stalledDNS struct {
	udp, tcp string
	queries  atomic.Int32 // UDP queries received
	conns    atomic.Int32 // TCP connections accepted
}

func newStalledDNS(t *testing.T, truncate bool) *stalledDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &stalledDNS{udp: pc.LocalAddr().String(), tcp: ln.Addr().String()}
	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		_ = pc.Close()
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			s.queries.Add(1)
			if reply := truncated(buf[:n]); truncate && reply != nil {
				_, _ = pc.WriteTo(reply, from)
			}
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	return s
}

// truncated builds the empty, truncated reply to query, or nil if it is not one.
func truncated(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	reply, err := (&dnsmessage.Message{
		Header:    dnsmessage.Header{ID: h.ID, Response: true, Truncated: true, RecursionDesired: h.RecursionDesired},
		Questions: []dnsmessage.Question{q},
	}).Pack()
	if err != nil {
		return nil
	}
	return reply
}

// resolver is Go's own resolver sending every query to s.
func (s *stalledDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		addr := s.udp
		if network == "tcp" || network == "tcp4" || network == "tcp6" {
			addr = s.tcp
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

// With Go's real resolver and a DNS server that never answers (over UDP, or over the TCP
// it sends the resolver to), every lookup gives up after the bound, each lookup with a
// bound of its own, and the destination is accepted as the contract says.
func TestLookupAgainstAStalledServerIsBoundedPerLookup(t *testing.T) {
	const bound = 300 * time.Millisecond
	for _, truncate := range []bool{false, true} {
		t.Run("truncate="+strconv.FormatBool(truncate), func(t *testing.T) {
			dns := newStalledDNS(t, truncate)
			v, err := New("https://sho.rt", dns.resolver(), bound)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				before := dns.queries.Load()
				start := time.Now()
				got := reasonOf(t, v.Check(context.Background(), "https://stalled-"+strconv.Itoa(i)+".example.com/"))
				took := time.Since(start)
				if got != accepted {
					t.Fatalf("lookup %d: %q; want acceptance", i, got)
				}
				if took < bound/2 || took > bound+700*time.Millisecond {
					t.Fatalf("lookup %d took %v; want about the bound of %v", i, took, bound)
				}
				if dns.queries.Load() == before {
					t.Fatalf("lookup %d never reached the server", i)
				}
			}
			if truncate && dns.conns.Load() == 0 {
				t.Fatal("the truncated replies sent no lookup over TCP")
			}
		})
	}
}
