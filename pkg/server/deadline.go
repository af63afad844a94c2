package server

import (
	"context"
	"net"
	"sync"
	"time"
)

// The server's read, write and idle timeouts are enforced by a sweep rather than by a
// deadline on the socket per request. fasthttp sets three deadlines on a keep-alive
// connection for every request (idle, read, write), and each is a clock reading and an
// update of the runtime's timer heap: about half a microsecond of a redirect that takes
// eight (measured against the same server without timeouts). Here setting a deadline is
// a store; a sweep every sweepEvery moves a connection whose deadline has passed to
// a deadline in the past, which ends its blocked read or write at once, as an expired
// deadline would. A timeout thus fires up to sweepEvery late, which the timeouts (seconds)
// allow.
const sweepEvery = 250 * time.Millisecond

// sweptListener hands out sweptConns and sweeps them until ctx ends. Deadlines are kept as
// monotonic time since base, so a step of the wall clock neither fires nor holds them.
type sweptListener struct {
	net.Listener
	base  time.Time
	mu    sync.Mutex
	conns map[*sweptConn]struct{}
}

// sweepDeadlines wraps ln so that its connections' deadlines cost a store under the
// connection's own (uncontended) lock; the sweep runs until ctx ends.
func sweepDeadlines(ctx context.Context, ln net.Listener) net.Listener {
	l := &sweptListener{Listener: ln, base: time.Now(), conns: map[*sweptConn]struct{}{}}
	go l.sweepUntil(ctx)
	return l
}

func (l *sweptListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &sweptConn{Conn: c, l: l}
	sc.read.real, sc.write.real = c.SetReadDeadline, c.SetWriteDeadline
	l.mu.Lock()
	l.conns[sc] = struct{}{}
	l.mu.Unlock()
	return sc, nil
}

func (l *sweptListener) sweepUntil(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.sweep(time.Since(l.base))
		}
	}
}

// sweep expires the deadlines that have passed by now.
func (l *sweptListener) sweep(now time.Duration) {
	l.mu.Lock()
	conns := make([]*sweptConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.expire(now)
	}
}

// sweptConn keeps its deadlines for the sweep. Its lock orders a deadline's setting against
// its expiry, so that a deadline set anew is never cut by the sweep of the old one.
type sweptConn struct {
	net.Conn
	l           *sweptListener
	mu          sync.Mutex
	read, write sweptDeadline
	closeOnce   sync.Once
}

// sweptDeadline is one direction's: when it falls (since the listener's base; 0: none), and
// whether the sweep has moved the socket's deadline into the past.
type sweptDeadline struct {
	at   time.Duration
	gone bool
	real func(time.Time) error
}

// past is a deadline that has passed for any clock.
var past = time.Unix(1, 0)

func (c *sweptConn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *sweptConn) SetReadDeadline(t time.Time) error  { return c.set(&c.read, t) }
func (c *sweptConn) SetWriteDeadline(t time.Time) error { return c.set(&c.write, t) }

// set keeps t as the deadline. A socket whose deadline the sweep moved into the past gets
// no deadline again: the sweep enforces the new one.
func (c *sweptConn) set(d *sweptDeadline, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d.at = 0
	if !t.IsZero() {
		d.at = max(t.Sub(c.l.base), 1)
	}
	if d.gone {
		d.gone = false
		return d.real(time.Time{})
	}
	return nil
}

// expire moves the deadlines that passed by now into the past on the socket, which ends a
// blocked read or write as an expired deadline would.
func (c *sweptConn) expire(now time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range []*sweptDeadline{&c.read, &c.write} {
		if d.at != 0 && d.at <= now && !d.gone {
			d.gone = true
			_ = d.real(past)
		}
	}
}

func (c *sweptConn) Close() error {
	c.closeOnce.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
