package stream

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestNextID(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{in: "0-0", want: "0-1"},
		{in: "1700000000000-7", want: "1700000000000-8"},
		{in: "5-18446744073709551615", want: "6-0"},
		{in: "18446744073709551615-18446744073709551615", want: "18446744073709551615-18446744073709551615"},
		{in: "12", err: "no sequence"},
		{in: "x-1", err: "invalid syntax"},
		{in: "1-y", err: "invalid syntax"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := nextID(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("nextID(%q) = %q, %v; want an error containing %q", tc.in, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("nextID(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestLowestID(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []string
		want string
		err  bool
	}{
		{name: "one", ids: []string{"3-1"}, want: "3-1"},
		{name: "sequence breaks a tie", ids: []string{"5-2", "5-10", "5-1"}, want: "5-1"},
		{name: "numeric, not lexical", ids: []string{"10-0", "9-99"}, want: "9-99"},
		{name: "none", err: true},
		{name: "malformed", ids: []string{"1-1", "oops"}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lowestID(tc.ids)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("lowestID(%v) = %q, %v; want %q (error %v)", tc.ids, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestBackoffDoublesWithinBoundsAndResets(t *testing.T) {
	b := backoff{min: 100 * time.Millisecond, max: time.Second}
	for i, step := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		step *= time.Millisecond
		if d := b.next(); d < step/2 || d > step {
			t.Fatalf("attempt %d waits %s, want within [%s, %s]", i+1, d, step/2, step)
		}
	}
	if !b.reset() || b.reset() {
		t.Fatal("reset must report the failure once")
	}
	if d := b.next(); d > 100*time.Millisecond {
		t.Fatalf("after reset the wait is %s, want at most the minimum", d)
	}
}

func TestToMessages(t *testing.T) {
	at := time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC)
	msgs, gone := toMessages([]redis.XMessage{
		{ID: "1-0", Values: map[string]any{"s": "x", "b": []byte("y"), "n": int64(3), "t": at}},
		{ID: "2-0"},
		{ID: "3-0", Values: map[string]any{}},
	})
	if len(gone) != 1 || gone[0] != "2-0" {
		t.Fatalf("gone = %v, want the entry without values", gone)
	}
	want := map[string]string{"s": "x", "b": "y", "n": "3", "t": "2026-02-03T04:05:06.000000007Z"}
	if len(msgs) != 2 || msgs[0].ID != "1-0" || fmt.Sprint(msgs[0].Values) != fmt.Sprint(want) || msgs[1].ID != "3-0" {
		t.Fatalf("messages = %+v, want 1-0 with %v and 3-0", msgs, want)
	}
}

// reply stands for an error reply of the server.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

func TestIsReply(t *testing.T) {
	noGroup := fmt.Errorf("read s: %w", reply("NOGROUP No such key 's'"))
	for _, tc := range []struct {
		name   string
		err    error
		prefix string
		want   bool
	}{
		{"wrapped reply", noGroup, "NOGROUP", true},
		{"other reply", noGroup, "BUSYGROUP", false},
		{"not a reply", errors.New("NOGROUP lookalike"), "NOGROUP", false},
		{"nil", nil, "NOGROUP", false},
	} {
		if got := isReply(tc.err, tc.prefix); got != tc.want {
			t.Errorf("%s: isReply = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDefaultConsumerIsUniquePerCall(t *testing.T) {
	a, b := DefaultConsumer(), DefaultConsumer()
	if a == b || !strings.Contains(a, "-") {
		t.Fatalf("consumer names %q and %q, want distinct host-suffix names", a, b)
	}
}
