package stream

import (
	"math/rand/v2"
	"time"
)

// backoff spaces out retries against a failing Redis or handler: doubling from min to max,
// with jitter so that the replicas of a service, all failing at once, do not all retry at
// once either.
type backoff struct {
	min, max time.Duration
	cur      time.Duration
}

// next returns how long to wait before the next attempt: between half and all of the
// current step.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	half := b.cur / 2
	return half + rand.N(b.cur-half+1)
}

// reset starts the next failure from min again and reports whether there had been one.
func (b *backoff) reset() bool {
	failing := b.cur != 0
	b.cur = 0
	return failing
}
