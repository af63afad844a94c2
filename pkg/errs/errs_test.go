package errs

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestStatusRoundTrip(t *testing.T) {
	for k, status := range kindStatus {
		if KindFromStatus(status) != k {
			t.Errorf("kind %d → %d → %d", k, status, KindFromStatus(status))
		}
	}
	if KindFromStatus(418) != KindInvalid || KindFromStatus(599) != KindInternal {
		t.Error("unknown statuses must fall back by class")
	}
}

func TestResponse(t *testing.T) {
	wrapped := fmt.Errorf("create: %w", TooMany("quota exceeded", 1500*time.Millisecond))
	cases := []struct {
		err    error
		status int
		msg    string
		retry  int
	}{
		{Invalid("url is required"), 400, "url is required", 0},
		{wrapped, 429, "quota exceeded", 2},
		{Unavailable("link service unavailable", errors.New("dial tcp: refused")), 503, "link service unavailable", 0},
		{errors.New("pq: password authentication failed"), 500, "internal server error", 0},
	}
	for _, tc := range cases {
		status, msg, retry := Response(tc.err)
		if status != tc.status || msg != tc.msg || retry != tc.retry {
			t.Errorf("%v: got %d %q %d", tc.err, status, msg, retry)
		}
	}
	if IsKind(errors.New("x"), KindInternal) {
		t.Error("a plain error carries no kind")
	}
	if http.StatusText(KindGone.Status()) != "Gone" {
		t.Error("KindGone is not 410")
	}
}

func TestRetryAfterIsAtLeastOneSecond(t *testing.T) {
	if _, _, retry := Response(TooMany("slow down", 10*time.Millisecond)); retry != 1 {
		t.Fatalf("Retry-After %d, want 1", retry)
	}
}

func TestTextChecks(t *testing.T) {
	for _, tc := range []struct {
		v, search string
		text      string
	}{
		{"héllo", "", ""},
		{strings.Repeat("é", 5), "", ""},
		{strings.Repeat("é", 6), "q must be valid text of at most 5 characters", "q must be valid text of at most 5 characters"},
		{"\xff", "q must be valid text of at most 5 characters", "q must be valid text of at most 5 characters"},
		{"a\x00b", "q must not contain control characters", ""},
	} {
		msg := func(err error) string {
			if err == nil {
				return ""
			}
			return err.(*Error).Message
		}
		if got := msg(Text("q", tc.v, 5)); got != tc.text {
			t.Errorf("Text(%q) = %q, want %q", tc.v, got, tc.text)
		}
		if got := msg(SearchText("q", tc.v, 5)); got != tc.search {
			t.Errorf("SearchText(%q) = %q, want %q", tc.v, got, tc.search)
		}
	}
}

func TestIsClientError(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{Invalid("bad"), true},
		{E(KindConflict, "taken"), true},
		{TooMany("slow down", time.Second), true},
		{fmt.Errorf("wrapped: %w", NotFound("gone")), true},
		{Unavailable("down", errors.New("x")), false},
		{E(KindInternal, "boom"), false},
		{errors.New("plain"), false},
		{nil, false},
	}
	for _, tc := range cases {
		if got := IsClientError(tc.err); got != tc.want {
			t.Errorf("IsClientError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
