package logging

import (
	"sync"
	"time"
)

// Limiter lets one log line through per Every and counts those it holds back, so that a
// failure repeating in a tight loop neither floods the log nor disappears from it. The zero
// value lets every line through.
type Limiter struct {
	Every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int64
}

// Allow reports whether a line may be logged at now and, when it may, how many lines were
// held back since the previous one.
func (l *Limiter) Allow(now time.Time) (ok bool, suppressed int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < l.Every {
		l.suppressed++
		return false, 0
	}
	l.last, suppressed, l.suppressed = now, l.suppressed, 0
	return true, suppressed
}
