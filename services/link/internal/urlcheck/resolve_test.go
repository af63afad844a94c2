package urlcheck

import (
	"context"
	"errors"
	"maps"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCheckDNS covers rule 8 with resolvers whose answers are set per case.
func TestCheckDNS(t *testing.T) {
	ip := func(s string) net.IPAddr { return net.IPAddr{IP: net.ParseIP(s)} }
	tests := []struct {
		name  string
		addrs []net.IPAddr
		err   error
		want  string
	}{
		{"public", []net.IPAddr{ip("93.184.216.34")}, nil, accepted},
		{"public v4 and v6", []net.IPAddr{ip("93.184.216.34"), ip("2606:4700::1")}, nil, accepted},
		{"private", []net.IPAddr{ip("10.1.2.3")}, nil, wantInternal},
		{"loopback 16-byte form", []net.IPAddr{{IP: net.ParseIP("127.0.0.1").To16()}}, nil, wantInternal},
		{"public then private", []net.IPAddr{ip("8.8.8.8"), ip("172.16.5.4")}, nil, wantInternal},
		{"private then public", []net.IPAddr{ip("fd00::1"), ip("8.8.8.8")}, nil, wantInternal},
		{"link-local with zone", []net.IPAddr{{IP: net.ParseIP("fe80::1"), Zone: "eth0"}}, nil, wantInternal},
		{"malformed address", []net.IPAddr{{IP: net.IP{1, 2, 3}}}, nil, wantInternal},
		{"no addresses", nil, nil, accepted},
		{"nxdomain", nil, &net.DNSError{Err: "no such host", IsNotFound: true}, accepted},
		{"server failure", nil, &net.DNSError{Err: "server misbehaving", IsTemporary: true}, accepted},
		{"no dns server", nil, errors.New("dial udp: connect: network is unreachable"), accepted},
		{"error with private answer", []net.IPAddr{ip("10.0.0.1")}, errors.New("partial"), accepted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var asked string
			r := funcResolver(func(_ context.Context, host string) ([]net.IPAddr, error) {
				asked = host
				return tc.addrs, tc.err
			})
			v, err := New("https://sho.rt", r, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			got := reasonOf(t, v.Check(context.Background(), "https://Dest.Example.COM./x"))
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if asked != "dest.example.com" {
				t.Errorf("resolver asked %q, want the normalised name", asked)
			}
		})
	}
}

// TestCheckLookupTimeout checks that Check gives up on a lookup after lookupTimeout and
// accepts, both for a resolver that honours ctx and for one that ignores it. Only that
// Check returns is asserted, with a generous bound, not how promptly.
func TestCheckLookupTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name string
		r    Resolver
	}{
		{"honours ctx", funcResolver(func(ctx context.Context, _ string) ([]net.IPAddr, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})},
		{"ignores ctx", funcResolver(func(context.Context, string) ([]net.IPAddr, error) {
			<-release
			return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}}, nil
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New("https://sho.rt", tc.r, 50*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- v.Check(context.Background(), "https://slow.example.com/") }()
			select {
			case err := <-done:
				if got := reasonOf(t, err); got != accepted {
					t.Errorf("got %q, want acceptance after timeout", got)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Check did not return after the lookup timeout")
			}
		})
	}
}

// TestCheckLookupUsesCallerContext checks that the caller's context bounds the lookup too,
// and that a deadline is always set on the context the resolver sees.
func TestCheckLookupUsesCallerContext(t *testing.T) {
	type key struct{}
	var sawValue, sawDeadline bool
	r := funcResolver(func(ctx context.Context, _ string) ([]net.IPAddr, error) {
		sawValue = ctx.Value(key{}) == "caller"
		_, sawDeadline = ctx.Deadline()
		return nil, errors.New("no answer")
	})
	v, err := New("https://sho.rt", r, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(context.Background(), key{}, "caller")
	if err := v.Check(ctx, "https://example.com/"); err != nil {
		t.Fatalf("Check = %v", err)
	}
	if !sawValue || !sawDeadline {
		t.Fatalf("resolver ctx: caller value %v, deadline %v; want both", sawValue, sawDeadline)
	}
}

// A name that resolved to nothing, or got no answer within the bound, is not asked about
// again for a while: bulk creations to one dead name wait for the bound once. Names that
// resolve are asked every time (their answers are the resolver cache's to keep).
func TestRememberFailures(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]int{}
	r := funcResolver(func(ctx context.Context, name string) ([]net.IPAddr, error) {
		mu.Lock()
		asked[name]++
		mu.Unlock()
		switch name {
		case "slow.example":
			<-ctx.Done()
			return nil, ctx.Err()
		case "good.example":
			return []net.IPAddr{{IP: net.ParseIP("93.184.216.34")}}, nil
		case "servfail.example":
			return nil, &net.DNSError{Err: "server misbehaving", Name: name, IsTemporary: true}
		}
		return nil, &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
	})
	for _, ttl := range []time.Duration{time.Minute, 0} {
		clear(asked)
		v, err := New("https://sho.rt", r, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		v.RememberFailures(ttl)
		for range 3 {
			for _, u := range []string{"https://slow.example/", "https://gone.example/", "https://good.example/", "https://servfail.example/"} {
				if err := v.Check(context.Background(), u); err != nil {
					t.Fatalf("Check(%s) = %v", u, err)
				}
			}
		}
		// A failed query says nothing about the name: asked again every time.
		want := map[string]int{"slow.example": 1, "gone.example": 1, "good.example": 3, "servfail.example": 3}
		if ttl == 0 {
			want = map[string]int{"slow.example": 3, "gone.example": 3, "good.example": 3, "servfail.example": 3}
		}
		mu.Lock()
		if !maps.Equal(asked, want) {
			t.Errorf("ttl %s: lookups %v, want %v", ttl, asked, want)
		}
		mu.Unlock()
	}
}

// A lookup cut short by the caller going away is not a verdict on the name.
func TestCallerCancellationIsNotRemembered(t *testing.T) {
	var asked atomic.Int32
	r := funcResolver(func(ctx context.Context, name string) ([]net.IPAddr, error) {
		asked.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	v, err := New("https://sho.rt", r, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	v.RememberFailures(time.Minute)
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_ = v.Check(ctx, "https://busy.example/")
		cancel()
	}
	if n := asked.Load(); n != 2 {
		t.Fatalf("lookups = %d, want 2: a caller's cancellation was remembered as a dead name", n)
	}
}
