package redisdb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// reply is a server error reply as go-redis and its hooks surface one.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestUnavailable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"dial refused", refused, true},
		{"dial refused, wrapped twice", fmt.Errorf("get: %w", fmt.Errorf("hit: %w", refused)), true},
		{"read timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, true},
		{"bare net.Error timeout", fmt.Errorf("x: %w", timeoutErr{}), true},
		{"deadline", fmt.Errorf("incr: %w", context.DeadlineExceeded), true},
		{"EOF", io.EOF, true},
		{"unexpected EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"pool timeout", redis.ErrPoolTimeout, true},
		{"pool exhausted", redis.ErrPoolExhausted, true},
		{"client closed", fmt.Errorf("x: %w", redis.ErrClosed), true},
		{"LOADING", reply("LOADING Redis is loading the dataset in memory"), true},
		{"MASTERDOWN", fmt.Errorf("x: %w", reply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")), true},
		{"TRYAGAIN", reply("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"CLUSTERDOWN", reply("CLUSTERDOWN The cluster is down"), true},
		{"LOADING behind KVRocks' ERR", reply("ERR LOADING dataset"), true},
		{"inside internal errs.Error", &errs.Error{Kind: errs.KindInternal, Message: "m", Err: refused}, true},

		{"redis.Nil", redis.Nil, false},
		{"redis.Nil wrapped", fmt.Errorf("get: %w", redis.Nil), false},
		{"caller canceled", context.Canceled, false},
		{"caller canceled a dial", &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("operation was canceled: %w", context.Canceled)}, false},
		{"duplicate key (SETNX lost)", errors.New("short code already exists"), false},
		{"command error", reply("ERR wrong number of arguments for 'get' command"), false},
		{"wrong type", reply("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"LOADING text without a reply", errors.New("LOADING config"), false},
		{"TLS alert", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, false},
		{"another service's 503", errs.Unavailable("link service unavailable", errors.New("status 503")), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unavailable(tc.err); got != tc.want {
				t.Fatalf("Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	cause := fmt.Errorf("incr quota: %w", redis.ErrPoolTimeout)
	cases := []struct {
		name       string
		err        error
		wantStatus int // 0: Classify must return nil
	}{
		{"unavailable", cause, 503},
		{"internal errs.Error around an outage", &errs.Error{Kind: errs.KindInternal, Message: "m", Err: cause}, 503},
		{"explicit kind wins", &errs.Error{Kind: errs.KindTooMany, Message: "quota exceeded", Err: cause}, 0},
		{"not an outage", redis.Nil, 0},
		{"nil", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.err)
			if tc.wantStatus == 0 {
				if got != nil {
					t.Fatalf("Classify(%v) = %v, want nil", tc.err, got)
				}
				return
			}
			if got == nil {
				t.Fatalf("Classify(%v) = nil", tc.err)
			}
			status, msg, _ := errs.Response(got)
			if status != tc.wantStatus || msg != "redis unavailable" || !errors.Is(got, redis.ErrPoolTimeout) {
				t.Fatalf("Classify(%v) → %d %q (cause kept: %v)", tc.err, status, msg, errors.Is(got, redis.ErrPoolTimeout))
			}
		})
	}
}

// listen starts a TCP server handing each connection to serve, closed when the test ends.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go serve(c)
		}
	}()
	return ln.Addr().String()
}

func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// replying serves RESP: HELLO is refused so the client falls back to RESP2 without any other
// handshake, and every other command gets answer verbatim.
func replying(answer string) func(net.Conn) {
	return func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			cmd, err := readCommand(r)
			if err != nil {
				return
			}
			out := answer
			if strings.EqualFold(cmd, "hello") {
				out = "-ERR unknown command 'HELLO'\r\n"
			}
			if _, err := io.WriteString(c, out); err != nil {
				return
			}
		}
	}
}

// readCommand reads one RESP array of bulk strings and returns its first element.
func readCommand(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil {
		return "", fmt.Errorf("not an array: %q", line)
	}
	var first string
	for i := range n {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return "", fmt.Errorf("not a bulk string: %q", line)
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		if i == 0 {
			first = string(buf[:size])
		}
	}
	return first, nil
}

func quickClient(t *testing.T, addr string) redis.UniversalClient {
	t.Helper()
	client := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DisableIdentity: true, ContextTimeoutEnabled: true,
		DialTimeout: 300 * time.Millisecond, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond,
	})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func TestUnavailableRealFailures(t *testing.T) {
	silent := func(t *testing.T) string { return listen(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) }) }
	cases := []struct {
		name string
		says string // the failure must be this one, not some other that happens to classify alike
		run  func(t *testing.T) error
		want bool
	}{
		{"connection refused", "connection refused", func(t *testing.T) error {
			return quickClient(t, closedAddr(t)).Get(context.Background(), "k").Err()
		}, true},
		{"context deadline against a server that never answers", "i/o timeout", func(t *testing.T) error {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			return quickClient(t, silent(t)).Get(ctx, "k").Err()
		}, true},
		{"read timeout against a server that never answers", "i/o timeout", func(t *testing.T) error {
			return quickClient(t, silent(t)).Get(context.Background(), "k").Err()
		}, true},
		{"server hangs up", "EOF", func(t *testing.T) error {
			return quickClient(t, listen(t, func(c net.Conn) { c.Close() })).Get(context.Background(), "k").Err()
		}, true},
		{"client closed", "client is closed", func(t *testing.T) error {
			client := quickClient(t, closedAddr(t))
			if err := client.Close(); err != nil {
				t.Fatal(err)
			}
			return client.Get(context.Background(), "k").Err()
		}, true},
		{"server loading", "LOADING", func(t *testing.T) error {
			return quickClient(t, listen(t, replying("-LOADING Redis is loading the dataset in memory\r\n"))).Get(context.Background(), "k").Err()
		}, true},
		{"missing key", "redis: nil", func(t *testing.T) error {
			return quickClient(t, listen(t, replying("$-1\r\n"))).Get(context.Background(), "k").Err()
		}, false},
		{"command error", "wrong number of arguments", func(t *testing.T) error {
			return quickClient(t, listen(t, replying("-ERR wrong number of arguments for 'get' command\r\n"))).Get(context.Background(), "k").Err()
		}, false},
		// go-redis does not interrupt a blocked read on cancellation, only at the read deadline,
		// so the caller is seen leaving only before the command reaches the socket.
		{"caller gone before the command", "context canceled", func(t *testing.T) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return quickClient(t, silent(t)).Get(ctx, "k").Err()
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.run(t)
			if err == nil {
				t.Fatal("the command succeeded")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("failed with %v, want a failure saying %q", err, tc.says)
			}
			wrapped := fmt.Errorf("store: %w", err)
			if got := Unavailable(wrapped); got != tc.want {
				t.Fatalf("Unavailable(%v) = %v, want %v", err, got, tc.want)
			}
			if got := Classify(wrapped) != nil; got != tc.want {
				t.Fatalf("Classify(%v) non-nil = %v, want %v", err, got, tc.want)
			}
		})
	}
}
