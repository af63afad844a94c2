package urlcheck

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// fakeResolver answers from a fixed table and reports NXDOMAIN for anything else, so tests
// never touch real DNS. It records the names it was asked about.
type fakeResolver struct {
	answers map[string][]string

	mu      sync.Mutex
	queries []string
}

func (f *fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	f.mu.Lock()
	f.queries = append(f.queries, host)
	f.mu.Unlock()
	ips, ok := f.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]net.IPAddr, 0, len(ips))
	for _, s := range ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

func (f *fakeResolver) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queries...)
}

// funcResolver adapts a function, for resolvers with unusual behaviour.
type funcResolver func(ctx context.Context, host string) ([]net.IPAddr, error)

func (f funcResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	return f(ctx, host)
}

// testAnswers is the DNS the table tests see.
func testAnswers() map[string][]string {
	return map[string][]string{
		"example.com":          {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"},
		"xn--mnchen-3ya.de":    {"93.184.216.35"},
		"my_host.example.com":  {"93.184.216.36"},
		"internal.example.com": {"10.0.0.5"},
		"metadata.example.com": {"169.254.169.254"},
		"mixed.example.com":    {"8.8.8.8", "192.168.1.10"},
		"v6ula.example.com":    {"fd12:3456::1"},
		"mapped.example.com":   {"::ffff:127.0.0.1"},
		"nat64.example.com":    {"64:ff9b::a00:1"},
		"loop6.example.com":    {"::1"},
		"public6.example.com":  {"2606:4700::1111"},
	}
}

// newTestValidator builds a Validator for base "https://sho.rt" over the fake DNS.
func newTestValidator(t testing.TB) (*Validator, *fakeResolver) {
	t.Helper()
	r := &fakeResolver{answers: testAnswers()}
	v, err := New("https://sho.rt", r, 2*time.Second)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v, r
}

// reasonOf returns "" for nil and the Reason of an *Error, failing on any other error type.
func reasonOf(t testing.TB, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *Error", err, err)
	}
	return e.Reason
}
