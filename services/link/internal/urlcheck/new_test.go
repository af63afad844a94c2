package urlcheck

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name    string
		base    string
		timeout time.Duration
	}{
		{"empty base", "", 2 * time.Second},
		{"no scheme", "sho.rt", 2 * time.Second},
		{"wrong scheme", "ftp://sho.rt", 2 * time.Second},
		{"no host", "http:///x", 2 * time.Second},
		{"bad port", "http://sho.rt:99999", 2 * time.Second},
		{"bad host", "http://1.2.3.4.5", 2 * time.Second},
		{"zero timeout", "https://sho.rt", 0},
		{"negative timeout", "https://sho.rt", -time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if v, err := New(tc.base, &fakeResolver{}, tc.timeout); err == nil {
				t.Fatalf("New(%q, %v) = %v, want error", tc.base, tc.timeout, v)
			}
		})
	}
}

func TestNewNilResolverUsesDefault(t *testing.T) {
	v, err := New("https://sho.rt", nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if v.resolver != net.DefaultResolver {
		t.Fatalf("resolver = %v, want net.DefaultResolver", v.resolver)
	}
	// An IP literal never reaches the resolver, so this stays off the network.
	if err := v.Check(context.Background(), "http://8.8.8.8/"); err != nil {
		t.Fatalf("Check = %v", err)
	}
}

// TestSelfHost covers rule 7 for the kinds of base URL the service is deployed with: the
// base host in any spelling and on any port is "this service", and wins over the
// private-address reason when both apply.
func TestSelfHost(t *testing.T) {
	tests := []struct {
		base, raw, want string
	}{
		{"http://localhost:8080", "http://localhost:8080/abc", wantSelf},
		{"http://localhost:8080", "https://LOCALHOST./", wantSelf},
		{"http://localhost:8080", "http://127.0.0.1:8080/", wantInternal},
		{"http://localhost:8080", "http://foo.localhost:8080/", wantInternal},
		{"https://sho.rt", "https://sho.rt:443/x", wantSelf},
		{"https://SHO.RT./", "https://sho.rt/x", wantSelf},
		{"https://sho.rt", "https://sho.rt.example.com/x", accepted},
		{"http://127.0.0.1:8080", "http://2130706433/", wantSelf},
		{"http://127.0.0.1:8080", "http://[::ffff:127.0.0.1]:9000/", wantSelf},
		{"http://127.0.0.1:8080", "http://127.0.0.2/", wantInternal},
		{"http://[2606:4700::1]", "http://[2606:4700:0::1]:81/", wantSelf},
		{"https://ｓｈｏ.ｒｔ", "https://sho.rt/", wantSelf},
	}
	for _, tc := range tests {
		t.Run(tc.base+" "+tc.raw, func(t *testing.T) {
			v, err := New(tc.base, &fakeResolver{}, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got := reasonOf(t, v.Check(context.Background(), tc.raw)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
