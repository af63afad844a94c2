package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"
)

// An open-loop load offers requests at a constant rate whatever the server does, as the
// public does: a request falls due at its time and waits, if its connection is still busy
// with a slow answer, for as long as it takes. wrk's closed loop instead sends the next
// request only when an answer came, so a stall delays the requests behind it and they are
// never measured (coordinated omission). Each connection here keeps its own share of the
// schedule (wrk2's model); a request's latency runs from when it fell due if its connection
// was still busy then, else from when it was sent, so the generator's own timer lateness is
// not charged to the server but the queueing behind a slow answer is.
//
// The generator runs as a process of its own (this binary with -open-loop), pinned to the
// load core like wrk, and prints its result as JSON.

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
	// Behind counts requests that fell due while their connection was still busy.
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
	reqs := make([][]byte, len(spec.Paths))
	for i, p := range spec.Paths {
		r := "GET " + p + " HTTP/1.1\r\nHost: " + spec.Addr + "\r\n"
		if spec.UserAgent != "" {
			r += "User-Agent: " + spec.UserAgent + "\r\n"
		}
		reqs[i] = []byte(r + "\r\n")
	}
	interval := time.Duration(float64(time.Second) / spec.Rate)
	start := time.Now().Add(100 * time.Millisecond)
	measureFrom, end := start.Add(spec.Warm), start.Add(spec.Warm+spec.Duration)
	perConn := int(float64(spec.Duration)/float64(interval))/spec.Conns + 16
	workers := make([]*loopConn, spec.Conns)
	var wg sync.WaitGroup
	for k := range workers {
		w := &loopConn{addr: spec.Addr, reqs: reqs, rng: rand.New(rand.NewPCG(uint64(k), 42)),
			lat: make([]time.Duration, 0, perConn)}
		workers[k] = w
		wg.Go(func() {
			w.run(ctx, start.Add(time.Duration(k)*interval), interval*time.Duration(spec.Conns), measureFrom, end)
		})
	}
	wg.Wait()
	var res openLoopResult
	var all []time.Duration
	for _, w := range workers {
		res.Sent += w.sent
		res.Errors += w.errors
		res.Behind += w.behind
		all = append(all, w.lat...)
	}
	res.Offered = float64(res.Sent) / spec.Duration.Seconds()
	if len(all) == 0 {
		return res, errors.New("open loop: no request answered")
	}
	slices.Sort(all)
	at := func(q float64) time.Duration { return all[min(len(all)-1, int(float64(len(all))*q))] }
	res.P50, res.P99, res.P999, res.Max = at(0.50), at(0.99), at(0.999), all[len(all)-1]
	return res, nil
}

// loopConn is one connection of the open loop and what it measured.
type loopConn struct {
	addr string
	reqs [][]byte
	rng  *rand.Rand
	conn net.Conn
	buf  [8192]byte

	sent, errors, behind int64
	lat                  []time.Duration
}

// run sends a request due every step from first on, until end; requests due from
// measureFrom on are measured.
func (w *loopConn) run(ctx context.Context, first time.Time, step time.Duration, measureFrom, end time.Time) {
	defer func() {
		if w.conn != nil {
			_ = w.conn.Close()
		}
	}()
	due, done := first, time.Time{}
	for ; due.Before(end) && ctx.Err() == nil; due = due.Add(step) {
		// The connection was still busy with the last answer when this request fell due.
		behind := done.After(due)
		if now := time.Now(); now.Before(due) {
			time.Sleep(due.Sub(now))
		}
		sent := time.Now()
		err := w.roundTrip(w.reqs[w.rng.IntN(len(w.reqs))])
		done = time.Now()
		if due.Before(measureFrom) {
			continue
		}
		w.sent++
		if err != nil {
			w.errors++
			continue
		}
		from := sent
		if behind {
			from, w.behind = due, w.behind+1
		}
		w.lat = append(w.lat, done.Sub(from))
	}
}

// roundTrip sends req and reads one answer, which must be a 302; a broken connection is
// dialled again on the next request.
func (w *loopConn) roundTrip(req []byte) error {
	if w.conn == nil {
		c, err := net.Dial("tcp", w.addr)
		if err != nil {
			return err
		}
		w.conn = c
	}
	err := w.exchange(req)
	if err != nil {
		_ = w.conn.Close()
		w.conn = nil
	}
	return err
}

var (
	headerEnd     = []byte("\r\n\r\n")
	contentLength = []byte("Content-Length")
)

func (w *loopConn) exchange(req []byte) error {
	if _, err := w.conn.Write(req); err != nil {
		return err
	}
	n, want := 0, -1
	for want < 0 || n < want {
		if n == len(w.buf) {
			return errors.New("answer larger than the buffer")
		}
		m, err := w.conn.Read(w.buf[n:])
		if err != nil {
			return err
		}
		n += m
		if want < 0 {
			if h := bytes.Index(w.buf[:n], headerEnd); h >= 0 {
				l, err := bodyLength(w.buf[:h])
				if err != nil {
					return err
				}
				want = h + len(headerEnd) + l
			}
		}
	}
	if n != want {
		return fmt.Errorf("%d bytes after the answer", n-want)
	}
	if !bytes.HasPrefix(w.buf[:n], []byte("HTTP/1.1 302 ")) {
		line, _, _ := bytes.Cut(w.buf[:n], []byte("\r\n"))
		return fmt.Errorf("answer %q, not a 302", line)
	}
	return nil
}

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
