package identity

import (
	"strconv"
	"strings"
	"sync"
	"time"
)

// Ed25519 signs deterministically and the tokens carry their times in whole seconds, so the
// calls one caller makes to one service within a second carry the same token: it need not be
// signed again, nor verified again by its receiver. Verifying is the costly part (an Ed25519
// check per service in the chain: under one signed-in caller's creations, the quota service
// spent 48 % of its CPU checking the two signatures of each call). A token is remembered as
// verified only until the earliest expiry in its chain, and by its exact bytes; a signed
// token only within its second.

// memorySize bounds the tokens remembered; past it, all are forgotten at once.
const memorySize = 4096

// tokenMemory remembers tokens by key until a time.
type tokenMemory[V any] struct {
	mu sync.Mutex
	m  map[string]remembered[V]
}

type remembered[V any] struct {
	value V
	until time.Time
}

// get returns the value under key while now is before its time.
func (t *tokenMemory[V]) get(key string, now time.Time) (V, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.m[key]
	if !ok || !now.Before(r.until) {
		var zero V
		return zero, false
	}
	return r.value, true
}

func (t *tokenMemory[V]) put(key string, value V, until time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= memorySize {
		t.m = make(map[string]remembered[V], 64)
	}
	t.m[key] = remembered[V]{value: value, until: until}
}

// signKey names what sign would sign from cl for audience in the second of now.
func signKey(cl claims, audience string, now time.Time) string {
	var b strings.Builder
	for _, f := range []string{audience, strconv.FormatInt(now.Unix(), 10), cl.Subject, cl.Role, cl.Status, cl.IPHash,
		strconv.Itoa(cl.QuotaLimit), cl.UserAgent, cl.TokenID, cl.SessionID, strconv.FormatBool(cl.Unverified), cl.OnBehalfOf} {
		b.WriteString(strconv.Itoa(len(f)))
		b.WriteByte(':')
		b.WriteString(f)
	}
	return b.String()
}
