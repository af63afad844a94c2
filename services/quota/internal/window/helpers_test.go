package window

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
)

const scope = quota.ScopeAnonymousCreate

// testClock is an injectable clock tests move by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *testClock {
	return &testClock{t: time.Date(2026, 11, 21, 13, 5, 30, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// memLedger is an in-memory Ledger with switches for failures, gates and overlap detection.
type memLedger struct {
	mu      sync.Mutex
	buckets map[string]Bucket // by scope|key|start

	failAdd error // returned by Add when set

	// inFlight and maxInFlight measure how many Adds overlap; addDelay widens the overlap.
	inFlight, maxInFlight atomic.Int32
	addDelay              time.Duration

	// adds counts ledger writes.
	adds atomic.Int32

	// bucketsCalls counts ledger reads, i.e. hydrations.
	bucketsCalls atomic.Int32

	// gate, when set, blocks Buckets until it is closed; entered is signalled first.
	gate    chan struct{}
	entered chan struct{}
}

func newLedger() *memLedger { return &memLedger{buckets: map[string]Bucket{}} }

func bucketID(scope, key string, start time.Time) string {
	return scope + "|" + key + "|" + start.UTC().Format(time.RFC3339)
}

func (m *memLedger) Add(_ context.Context, b Bucket, delta int) error {
	m.adds.Add(1)
	n := m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	for {
		cur := m.maxInFlight.Load()
		if n <= cur || m.maxInFlight.CompareAndSwap(cur, n) {
			break
		}
	}
	time.Sleep(m.addDelay)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failAdd != nil {
		return m.failAdd
	}
	id := bucketID(b.Scope, b.Key, b.Start)
	cur, ok := m.buckets[id]
	if (!ok && delta < 0) || cur.Count+delta < 0 {
		return nil
	}
	if !ok {
		cur = b
		cur.Count = 0
	}
	cur.Count += delta
	m.buckets[id] = cur
	return nil
}

func (m *memLedger) Buckets(_ context.Context, scope, key string, from time.Time) ([]Bucket, error) {
	m.bucketsCalls.Add(1)
	if m.gate != nil {
		m.entered <- struct{}{}
		<-m.gate
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Bucket
	for _, b := range m.buckets {
		if b.Scope == scope && b.Key == key && !b.Start.Before(from) && b.Count > 0 {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out, nil
}

func (m *memLedger) total(scope, key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, b := range m.buckets {
		if b.Scope == scope && b.Key == key {
			n += b.Count
		}
	}
	return n
}

func (m *memLedger) setFailAdd(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failAdd = err
}

var errLedgerDown = errors.New("ledger down")
