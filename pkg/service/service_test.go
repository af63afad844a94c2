package service

import (
	"context"
	"net"
	"testing"
)

// A service that cannot take its address must still release what it opened.
func TestListenReleasesWhenTheAddressIsTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	released, served := false, false
	err = Listen(context.Background(), held.Addr().String(),
		func(context.Context, net.Listener) error { served = true; return nil },
		func() { released = true })
	if err == nil || served || !released {
		t.Fatalf("err %v, served %v, released %v", err, served, released)
	}

	var got net.Listener
	err = Listen(context.Background(), "127.0.0.1:0",
		func(_ context.Context, ln net.Listener) error { got = ln; return ln.Close() },
		func() { t.Error("released although the address was free") })
	if err != nil || got == nil {
		t.Fatalf("free address: %v %v", err, got)
	}
}
