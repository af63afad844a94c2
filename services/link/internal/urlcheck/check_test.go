package urlcheck

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// checkCase is one row of the Check table: the input and the exact reason expected, or ""
// when the URL must be accepted.
type checkCase struct {
	name string
	raw  string
	want string
}

// allCases gathers every table, so TestCheck and FuzzCheck's seed corpus stay in step.
func allCases() []checkCase {
	return slices.Concat(syntaxCases(), ipv4Cases(), ipv6Cases(), nameCases())
}

func TestCheck(t *testing.T) {
	v, _ := newTestValidator(t)
	cases := allCases()
	if len(cases) < 50 {
		t.Fatalf("table has %d rows, want at least 50", len(cases))
	}
	seen := make(map[string]bool, len(cases))
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			got := reasonOf(t, v.Check(context.Background(), tc.raw))
			if got != tc.want {
				t.Errorf("Check(%q) = %q, want %q", tc.raw, got, tc.want)
			}
		})
	}
}

// TestCheckNilIsUntypedNil guards against returning a nil *Error inside a non-nil error.
func TestCheckNilIsUntypedNil(t *testing.T) {
	v, _ := newTestValidator(t)
	if err := v.Check(context.Background(), "https://example.com/"); err != nil {
		t.Fatalf("Check = %#v, want untyped nil", err)
	}
}

// TestIPLiteralsSkipDNS checks that addresses in any notation are judged without a lookup:
// handing "2130706433" to a resolver would let its own parsing rules decide.
func TestIPLiteralsSkipDNS(t *testing.T) {
	v, r := newTestValidator(t)
	for _, raw := range []string{
		"http://8.8.8.8/", "http://2130706433/", "http://0x7f.1/", "http://[2606:4700::1]/",
		"http://１２７.０.０.１/", "http://localhost/", "http://foo.localhost/",
	} {
		_ = v.Check(context.Background(), raw)
	}
	if q := r.asked(); len(q) != 0 {
		t.Fatalf("resolver was asked %q, want no lookups", q)
	}
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Reason: reasonScheme}
	if e.Error() != "url must use http or https" {
		t.Fatalf("Error() = %q", e.Error())
	}
}

func TestMaxLengthBoundary(t *testing.T) {
	v, _ := newTestValidator(t)
	prefix := "https://example.com/"
	tests := []struct {
		name string
		n    int
		want string
	}{
		{"exactly max", MaxLength, ""},
		{"one over", MaxLength + 1, reasonTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw := prefix + strings.Repeat("a", tc.n-len(prefix))
			if got := reasonOf(t, v.Check(context.Background(), raw)); got != tc.want {
				t.Errorf("len %d: got %q, want %q", len(raw), got, tc.want)
			}
		})
	}
}
