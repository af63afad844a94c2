package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"time"
)

// An open-loop load offers requests at a constant rate whatever the server does, as the
// public does: request k falls due at start + k/rate and goes out on the first idle
// connection; when none is idle it waits, and its latency, counted from when it fell due,
// holds the wait. wrk's closed loop instead sends the next request only when an answer
// came, so a stall delays the requests behind it and they are never measured (coordinated
// omission).
//
// The generator is one thread polling its sockets with epoll, outside Go's scheduler, so
// that its own timing is exact to microseconds: a goroutine per connection, parked on the
// network poller and woken by timers, itself added milliseconds of tail at these rates. It
// runs as a process of its own (this binary with -open-loop), pinned to the load core like
// wrk, and prints its result as JSON.

// openLoopSpec is what the generator process is asked to do.
type openLoopSpec struct {
	Addr      string        `json:"addr"`
	Paths     []string      `json:"paths"`
	UserAgent string        `json:"user_agent"`
	Rate      float64       `json:"rate"`
	Conns     int           `json:"conns"`
	Warm      time.Duration `json:"warm"`
	Duration  time.Duration `json:"duration"`
}

// openLoopResult is what it measured over Duration, after Warm.
type openLoopResult struct {
	Offered float64 `json:"offered"` // requests that fell due per second
	Sent    int64   `json:"sent"`
	Errors  int64   `json:"errors"`
	// Behind counts requests sent over a millisecond after they fell due: no connection
	// was idle (the server was behind).
	Behind int64         `json:"behind"`
	P50    time.Duration `json:"p50"`
	P99    time.Duration `json:"p99"`
	P999   time.Duration `json:"p999"`
	Max    time.Duration `json:"max"`
}

// runOpenLoop runs the generator pinned to the load core and returns its measurement.
func runOpenLoop(ctx context.Context, o options, spec openLoopSpec) (openLoopResult, error) {
	in, err := json.Marshal(spec)
	if err != nil {
		return openLoopResult{}, err
	}
	self, err := os.Executable()
	if err != nil {
		return openLoopResult{}, err
	}
	cmd := exec.CommandContext(ctx, "taskset", "-c", o.loadCPU, self, "-open-loop")
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return openLoopResult{}, fmt.Errorf("open-loop generator: %w", err)
	}
	var res openLoopResult
	if err := json.Unmarshal(out, &res); err != nil {
		return openLoopResult{}, fmt.Errorf("open-loop generator answered %q: %w", out, err)
	}
	if res.Errors > 0 {
		return res, fmt.Errorf("open-loop load against %s: %d of %d requests failed", spec.Addr, res.Errors, res.Sent)
	}
	return res, nil
}

// serveOpenLoop is the generator process: the spec on stdin, the result on stdout.
func serveOpenLoop(ctx context.Context) error {
	var spec openLoopSpec
	if err := json.NewDecoder(os.Stdin).Decode(&spec); err != nil {
		return err
	}
	res, err := openLoop(ctx, spec)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// openLoop offers spec's load and measures it.
func openLoop(ctx context.Context, spec openLoopSpec) (openLoopResult, error) {
	if spec.Rate <= 0 || spec.Conns <= 0 || len(spec.Paths) == 0 {
		return openLoopResult{}, errors.New("open loop: rate, connections and paths are needed")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	addr, err := netip.ParseAddrPort(spec.Addr)
	if err != nil {
		return openLoopResult{}, err
	}
	reqs := make([][]byte, len(spec.Paths))
	for i, p := range spec.Paths {
		r := "GET " + p + " HTTP/1.1\r\nHost: " + spec.Addr + "\r\n"
		if spec.UserAgent != "" {
			r += "User-Agent: " + spec.UserAgent + "\r\n"
		}
		reqs[i] = []byte(r + "\r\n")
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return openLoopResult{}, err
	}
	defer syscall.Close(epfd)
	conns := make([]*loopConn, spec.Conns)
	byFD := map[int32]*loopConn{}
	idle := make([]*loopConn, 0, spec.Conns)
	for i := range conns {
		c := &loopConn{}
		if err := c.dial(epfd, addr); err != nil {
			return openLoopResult{}, err
		}
		conns[i], byFD[int32(c.fd)] = c, c
		idle = append(idle, c)
	}
	defer func() {
		for _, c := range conns {
			_ = syscall.Close(c.fd)
		}
	}()

	interval := float64(time.Second) / spec.Rate
	total := int64(float64(spec.Warm+spec.Duration) / interval)
	warm := int64(float64(spec.Warm) / interval)
	lat := make([]time.Duration, 0, total-warm)
	rng := rand.New(rand.NewPCG(1, 42))
	var res openLoopResult
	events := make([]syscall.EpollEvent, 64)
	start := time.Now().Add(50 * time.Millisecond)
	dueAt := func(k int64) time.Time { return start.Add(time.Duration(float64(k) * interval)) }
	next := int64(0) // the next request to send
	for busy := 0; next < total || busy > 0; {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		now := time.Now()
		for next < total && len(idle) > 0 && !now.Before(dueAt(next)) {
			c := idle[len(idle)-1]
			idle = idle[:len(idle)-1]
			c.due, c.measured = dueAt(next), next >= warm
			if now.Sub(c.due) > time.Millisecond && c.measured {
				res.Behind++ // no connection was idle when it fell due
			}
			next++
			busy++
			if err := c.send(reqs[rng.IntN(len(reqs))]); err != nil {
				return res, err
			}
		}
		timeout := 0 // poll while a request is due or about to be
		if next < total && len(idle) > 0 {
			if wait := time.Until(dueAt(next)); wait > 2*time.Millisecond {
				timeout = int(wait/time.Millisecond) - 1
			}
		} else if next >= total || len(idle) == 0 {
			timeout = 1
		}
		n, err := syscall.EpollWait(epfd, events, timeout)
		if err != nil && err != syscall.EINTR {
			return res, err
		}
		for _, ev := range events[:max(n, 0)] {
			c := byFD[ev.Fd]
			done, err := c.receive()
			if err != nil {
				res.Errors++
				fmt.Fprintln(os.Stderr, "open loop:", err)
				delete(byFD, int32(c.fd))
				_ = syscall.Close(c.fd)
				if err := c.dial(epfd, addr); err != nil {
					return res, err
				}
				byFD[int32(c.fd)] = c
				done = true
			}
			if !done {
				continue
			}
			if c.measured {
				res.Sent++
				lat = append(lat, time.Since(c.due))
			}
			busy--
			idle = append(idle, c)
		}
	}
	res.Offered = float64(res.Sent) / spec.Duration.Seconds()
	if len(lat) == 0 {
		return res, errors.New("open loop: no request answered")
	}
	slices.Sort(lat)
	at := func(q float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*q))] }
	res.P50, res.P99, res.P999, res.Max = at(0.50), at(0.99), at(0.999), lat[len(lat)-1]
	return res, nil
}

// loopConn is one keep-alive connection of the open loop: a non-blocking socket and the
// answer it is reading.
type loopConn struct {
	fd       int
	due      time.Time // when its request in flight fell due
	measured bool      // that request is past the warm-up
	buf      [8192]byte
	n, want  int
}

func (c *loopConn) dial(epfd int, addr netip.AddrPort) error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: int(addr.Port()), Addr: addr.Addr().As4()}); err != nil {
		_ = syscall.Close(fd)
		return err
	}
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	if err := syscall.SetNonblock(fd, true); err != nil {
		_ = syscall.Close(fd)
		return err
	}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}); err != nil {
		_ = syscall.Close(fd)
		return err
	}
	c.fd = fd
	return nil
}

// send writes a request whole: it is far smaller than a socket's buffer.
func (c *loopConn) send(req []byte) error {
	c.n, c.want = 0, -1
	n, err := syscall.Write(c.fd, req)
	if err == nil && n != len(req) {
		err = fmt.Errorf("wrote %d of %d bytes", n, len(req))
	}
	return err
}

// receive reads what has arrived and reports whether the answer is complete; it must be a
// 302 and nothing beyond it.
func (c *loopConn) receive() (bool, error) {
	for {
		if c.n == len(c.buf) {
			return false, errors.New("answer larger than the buffer")
		}
		m, err := syscall.Read(c.fd, c.buf[c.n:])
		if err == syscall.EAGAIN {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if m == 0 {
			return false, errors.New("connection closed by the server")
		}
		c.n += m
		if c.want < 0 {
			if h := bytes.Index(c.buf[:c.n], headerEnd); h >= 0 {
				l, err := bodyLength(c.buf[:h])
				if err != nil {
					return false, err
				}
				c.want = h + len(headerEnd) + l
			}
		}
		if c.want >= 0 && c.n >= c.want {
			if c.n != c.want {
				return false, fmt.Errorf("%d bytes after the answer", c.n-c.want)
			}
			if !bytes.HasPrefix(c.buf[:c.n], []byte("HTTP/1.1 302 ")) {
				line, _, _ := bytes.Cut(c.buf[:c.n], []byte("\r\n"))
				return false, fmt.Errorf("answer %q, not a 302", line)
			}
			return true, nil
		}
	}
}

var (
	headerEnd     = []byte("\r\n\r\n")
	contentLength = []byte("Content-Length")
)

// bodyLength reads Content-Length from an answer's head, without allocating: the
// generator must not make garbage of its own to collect while it measures.
func bodyLength(head []byte) (int, error) {
	for line := range bytes.SplitSeq(head, []byte("\r\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(name, contentLength) {
			n := 0
			for _, ch := range bytes.TrimSpace(value) {
				if ch < '0' || ch > '9' || n > 1<<20 {
					return 0, fmt.Errorf("Content-Length %q", value)
				}
				n = n*10 + int(ch-'0')
			}
			return n, nil
		}
	}
	return 0, errors.New("answer without Content-Length")
}
