package server

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// pair returns the server side of a connection accepted through a swept listener, and the
// client side.
func pair(t *testing.T) (server net.Conn, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	swept := sweepDeadlines(ctx, ln)
	t.Cleanup(func() { cancel(); _ = ln.Close() })
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = swept.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return server, client
}

// A read past its deadline ends with a timeout, at most a sweep late; a deadline set anew
// lets the connection read again.
func TestSweptReadDeadline(t *testing.T) {
	server, client := pair(t)
	start := time.Now()
	_ = server.SetReadDeadline(start.Add(100 * time.Millisecond))
	_, err := server.Read(make([]byte, 1))
	took := time.Since(start)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read ended with %v, want a timeout", err)
	}
	if took < 100*time.Millisecond || took > 100*time.Millisecond+2*sweepEvery+time.Second {
		t.Fatalf("timed out after %s, want 100ms to 100ms + a sweep", took)
	}
	_ = server.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := client.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := server.Read(buf); err != nil || buf[0] != 'x' {
		t.Fatalf("read after a new deadline: %q, %v", buf, err)
	}
}

// A deadline moved on before it passes never fires: a keep-alive connection whose every
// request renews it is never cut.
func TestSweptDeadlineRenewed(t *testing.T) {
	server, client := pair(t)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 1)
		for range 6 {
			_ = server.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if _, err := server.Read(buf); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 6 {
		time.Sleep(150 * time.Millisecond) // 900 ms in all: beyond one deadline, within each
		if _, err := client.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("a renewed deadline fired: %v", err)
	}
}

// A write that cannot go on (the peer reads nothing) ends at its deadline.
func TestSweptWriteDeadline(t *testing.T) {
	server, _ := pair(t)
	_ = server.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	big := make([]byte, 1<<20)
	var err error
	for i := 0; i < 256 && err == nil; i++ { // fills both sockets' buffers, then blocks
		_, err = server.Write(big)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write ended with %v, want a timeout", err)
	}
}
