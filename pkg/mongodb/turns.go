package mongodb

import (
	"context"
	"sync"
)

// Turns gives the writers of one key (a unique index's value) turns, one at a time within a
// process; writers of different keys never wait for each other. The zero value is ready.
//
// Workaround for the embedded store (DocumentDB): a unique index is a PostgreSQL exclusion
// constraint there, and concurrent inserts of one key deadlock: each writer enters its index
// entry, then waits for the other's transaction, and PostgreSQL aborts one after
// deadlock_timeout ("deadlock detected", see IsDeadlock). With three or more such writers the
// aborted one comes back into a ring still waiting, and the ring can go on aborting for as
// long as writers keep coming back: a livelock (24 link inserts of one code spent 40 attempts
// each without a commit; 5 quota units of one new bucket waited past their 2 s deadline).
// Taking turns, the first writer commits and the next one meets a committed key, as on
// MongoDB. Writers in different processes can still meet, rarely and few; their stores retry
// a deadlock. On MongoDB the turns cost a map lookup.
type Turns struct {
	mu   sync.Mutex
	held map[string]*turn
}

// turn is one key's turn: a token in it means it is taken; waiting counts the writers
// holding or wanting it, so the last one out removes the entry.
type turn struct {
	token   chan struct{}
	waiting int
}

// Take waits for key's turn, or for ctx to end; done gives the turn to the next writer.
func (t *Turns) Take(ctx context.Context, key string) (done func(), err error) {
	t.mu.Lock()
	if t.held == nil {
		t.held = map[string]*turn{}
	}
	k := t.held[key]
	if k == nil {
		k = &turn{token: make(chan struct{}, 1)}
		t.held[key] = k
	}
	k.waiting++
	t.mu.Unlock()
	leave := func() {
		t.mu.Lock()
		if k.waiting--; k.waiting == 0 {
			delete(t.held, key)
		}
		t.mu.Unlock()
	}
	select {
	case k.token <- struct{}{}:
		return func() { <-k.token; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}
