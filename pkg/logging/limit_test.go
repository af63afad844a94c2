package logging

import (
	"testing"
	"time"
)

func TestLimiterLetsOneLinePerIntervalAndCountsTheRest(t *testing.T) {
	l := Limiter{Every: time.Minute}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at         time.Duration
		ok         bool
		suppressed int64
	}{
		{at: 0, ok: true},
		{at: time.Second},
		{at: 59 * time.Second},
		{at: time.Minute, ok: true, suppressed: 2},
		{at: 2*time.Minute + time.Second, ok: true},
	} {
		ok, suppressed := l.Allow(t0.Add(tc.at))
		if ok != tc.ok || suppressed != tc.suppressed {
			t.Fatalf("at +%s: allow = %v, %d; want %v, %d", tc.at, ok, suppressed, tc.ok, tc.suppressed)
		}
	}
}
