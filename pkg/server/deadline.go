package server

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The server's read, write and idle timeouts are enforced by a sweep rather than by a
// deadline on the socket per request. fasthttp sets three deadlines on a keep-alive
// connection for every request (idle, read, write), and each is a clock reading and an
// update of the runtime's timer heap: about half a microsecond of a redirect that takes
// eight (measured against the same server without timeouts). Here setting a deadline is
// an atomic store; a sweep every sweepEvery moves a connection whose deadline has passed to
// a deadline in the past, which ends its blocked read or write at once, as an expired
// deadline would. A timeout thus fires up to sweepEvery late, which the timeouts (seconds)
// allow.
const sweepEvery = 250 * time.Millisecond

// sweptListener hands out sweptConns and sweeps them until ctx ends.
type sweptListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[*sweptConn]struct{}
}

// sweepDeadlines wraps ln so that its connections' deadlines cost an atomic store; the sweep
// runs until ctx ends.
func sweepDeadlines(ctx context.Context, ln net.Listener) net.Listener {
	l := &sweptListener{Listener: ln, conns: map[*sweptConn]struct{}{}}
	go l.sweepUntil(ctx)
	return l
}

func (l *sweptListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &sweptConn{Conn: c, l: l}
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
		case now := <-t.C:
			l.sweep(now)
		}
	}
}

// sweep expires the deadlines that have passed by now.
func (l *sweptListener) sweep(now time.Time) {
	l.mu.Lock()
	due := make([]*sweptConn, 0, 8)
	for c := range l.conns {
		if c.due(now) {
			due = append(due, c)
		}
	}
	l.mu.Unlock()
	for _, c := range due {
		c.expire(now)
	}
}

// sweptConn keeps its deadlines as nanoseconds since 1970 (0: none) for the sweep.
type sweptConn struct {
	net.Conn
	l                *sweptListener
	read, write      atomic.Int64
	closeOnce        sync.Once
	readGone, wrGone atomic.Bool // the socket's deadline has been moved into the past
}

// past is a deadline that has passed for any clock.
var past = time.Unix(1, 0)

func (c *sweptConn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *sweptConn) SetReadDeadline(t time.Time) error {
	return c.set(&c.read, &c.readGone, t, c.Conn.SetReadDeadline)
}

func (c *sweptConn) SetWriteDeadline(t time.Time) error {
	return c.set(&c.write, &c.wrGone, t, c.Conn.SetWriteDeadline)
}

// set keeps t as the deadline. A socket whose deadline the sweep moved into the past gets
// a real one again (no deadline): a connection is only reused after a timeout by a caller
// that set a new deadline, which the sweep enforces from then on.
func (c *sweptConn) set(at *atomic.Int64, gone *atomic.Bool, t time.Time, real func(time.Time) error) error {
	n := int64(0)
	if !t.IsZero() {
		n = t.UnixNano()
	}
	at.Store(n)
	if gone.Load() {
		gone.Store(false)
		return real(time.Time{})
	}
	return nil
}

func (c *sweptConn) due(now time.Time) bool {
	n := now.UnixNano()
	r, w := c.read.Load(), c.write.Load()
	return (r != 0 && r <= n && !c.readGone.Load()) || (w != 0 && w <= n && !c.wrGone.Load())
}

// expire moves the passed deadlines of the socket into the past, unless they were set anew
// meanwhile.
func (c *sweptConn) expire(now time.Time) {
	n := now.UnixNano()
	for _, d := range []struct {
		at   *atomic.Int64
		gone *atomic.Bool
		real func(time.Time) error
	}{{&c.read, &c.readGone, c.Conn.SetReadDeadline}, {&c.write, &c.wrGone, c.Conn.SetWriteDeadline}} {
		if v := d.at.Load(); v != 0 && v <= n && !d.gone.Load() {
			d.gone.Store(true)
			_ = d.real(past)
			if d.at.Load() != v { // set anew while it expired: the new deadline stands
				d.gone.Store(false)
				_ = d.real(time.Time{})
			}
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
