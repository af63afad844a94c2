package stream_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/pkg/testenv"
)

// patience bounds every wait: generous, because the tests share a loaded machine, and
// never an assertion about speed.
const patience = 60 * time.Second

func logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// run starts fn in the background and returns a function that stops it and waits for it to
// return; the test ends by calling it too.
func run(t *testing.T, fn func(context.Context)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); fn(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(patience):
				t.Errorf("still running %s after it was stopped", patience)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// eventually waits until cond holds, failing the test after patience.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", patience, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// must returns v, failing the test on err: must(f())(t).
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// businessID names the i-th test entry; handlers key their store by it.
func businessID(i int) string { return fmt.Sprintf("e%04d", i) }

// add appends entries from..to-1 to s, each carrying its business id, and returns their
// stream ids.
func add(t *testing.T, rdb redis.UniversalClient, s string, from, to int) []string {
	t.Helper()
	ids := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		ids = append(ids, must(rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: s,
			Values: map[string]any{"id": businessID(i)}}).Result())(t))
	}
	return ids
}

func pending(t *testing.T, rdb redis.UniversalClient, s, group string) *redis.XPending {
	t.Helper()
	return must(rdb.XPending(context.Background(), s, group).Result())(t)
}

func xlen(t *testing.T, rdb redis.UniversalClient, s string) int64 {
	t.Helper()
	return must(rdb.XLen(context.Background(), s).Result())(t)
}

// store is the idempotent store of a consumer: what it keeps is keyed by business id, and
// it also counts how often each id was delivered.
type store struct {
	mu         sync.Mutex
	deliveries map[string]int
}

func newStore() *store { return &store{deliveries: map[string]int{}} }

func (s *store) record(msgs []stream.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		s.deliveries[m.Values["id"]]++
	}
}

// handle records msgs and succeeds.
func (s *store) handle(_ context.Context, msgs []stream.Message) error {
	s.record(msgs)
	return nil
}

func (s *store) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.deliveries)
}

func (s *store) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deliveries[id]
}

// proxy forwards connections to Redis and can cut them, standing in for a Redis restart
// without restarting the server the other tests share.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
}

// redisBehindProxy returns a client of the test Redis whose connections go through a proxy.
func redisBehindProxy(t *testing.T) (redis.UniversalClient, *proxy) {
	t.Helper()
	_, url := testenv.URIs(t)
	opts := must(redis.ParseURL(url))(t)
	p := &proxy{ln: must(net.Listen("tcp", "127.0.0.1:0"))(t), target: opts.Addr, conns: map[net.Conn]bool{}}
	go p.accept()
	opts.Addr = p.ln.Addr().String()
	opts.ContextTimeoutEnabled = true
	opts.DialTimeout = time.Second
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close(); _ = p.ln.Close(); p.setCut(true) })
	return rdb, p
}

// setCut closes every forwarded connection and refuses new ones (true), or forwards again.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
}

func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		if p.cut {
			_ = c.Close()
			continue
		}
		p.conns[c] = true
	}
	return !p.cut
}

func (p *proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			server, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = client.Close()
				return
			}
			if !p.track(client, server) {
				return
			}
			go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
			_, _ = io.Copy(client, server)
			_ = client.Close()
		}()
	}
}
