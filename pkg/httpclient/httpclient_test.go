package httpclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
)

func newClient(url string) *Client {
	return New(Options{Service: "peer", BaseURL: url, TracerProvider: noop.NewTracerProvider(), Timeout: 3 * time.Second})
}

// A flaky peer: GETs are retried, POSTs without an idempotency key never are.
func TestRetriesOnlyIdempotentCalls(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"busy"}`))
	}))
	defer srv.Close()
	c := newClient(srv.URL)
	ctx := context.Background()
	cases := []struct {
		req  Request
		want int32
	}{
		{Request{Method: "GET", Path: "/x"}, 3},
		{Request{Method: "POST", Path: "/x", Body: map[string]int{"a": 1}}, 1},
		{Request{Method: "POST", Path: "/x", IdempotencyKey: "k1"}, 3},
	}
	for _, tc := range cases {
		calls.Store(0)
		err := c.Do(ctx, tc.req, nil)
		if e, ok := errs.As(err); !ok || e.Kind != errs.KindUnavailable || e.Message != "busy" {
			t.Errorf("%s %s: got %v", tc.req.Method, tc.req.IdempotencyKey, err)
		}
		if calls.Load() != tc.want {
			t.Errorf("%s %q: %d attempts, want %d", tc.req.Method, tc.req.IdempotencyKey, calls.Load(), tc.want)
		}
	}
}

func TestDecodesPeerEnvelopeAndCarriesToken(t *testing.T) {
	var gotAuth, gotKey, gotTimeout string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotKey, gotTimeout = r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"), r.Header.Get(server.TimeoutHeader)
		switch r.URL.Path {
		case "/limited":
			w.Header().Set("Retry-After", "42")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":"slow down"}`))
		case "/bare":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(`<html>proxy error</html>`))
		default:
			_, _ = w.Write([]byte(`{"value":7}`))
		}
	}))
	defer srv.Close()
	c := newClient(srv.URL)
	// The peer stands for link, a service the gateway calls.
	c.service = "link"
	set, err := identity.GenerateKeySet(identity.Gateway, "link")
	if err != nil {
		t.Fatal(err)
	}
	gw, _ := identity.NewKeys(identity.Gateway, set.Keys[identity.Gateway], set.Certs)
	peer, _ := identity.NewKeys("link", set.Keys["link"], set.Certs)
	ctx, err := gw.WithCaller(context.Background(), identity.Caller{UserID: "u7", Role: identity.RoleUser})
	if err != nil {
		t.Fatal(err)
	}

	var out struct{ Value int }
	if err := c.Do(ctx, Request{Method: "GET", Path: "/ok"}, &out); err != nil || out.Value != 7 {
		t.Fatalf("ok: %v %+v", err, out)
	}
	// The call carries a token addressed to the peer, for the caller of ctx.
	// The peer learns how long we wait: at most the client's 3 s.
	if ms, err := strconv.Atoi(gotTimeout); err != nil || ms < 2000 || ms > 3000 {
		t.Fatalf("%s = %q", server.TimeoutHeader, gotTimeout)
	}
	tok, _ := strings.CutPrefix(gotAuth, "Bearer ")
	if caller, err := peer.Verify(tok); err != nil || caller.UserID != "u7" {
		t.Fatalf("Authorization %q: %+v, %v", gotAuth, caller, err)
	}
	err = c.Do(ctx, Request{Method: "POST", Path: "/limited", IdempotencyKey: "abc"}, nil)
	e, ok := errs.As(err)
	if !ok || e.Kind != errs.KindTooMany || e.Message != "slow down" || e.RetryAfter != 42*time.Second || gotKey != "abc" {
		t.Fatalf("limited: %+v (key %q)", err, gotKey)
	}
	err = c.Do(ctx, Request{Method: "POST", Path: "/bare"}, nil)
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindInternal || e.Message != "internal server error" {
		t.Fatalf("no envelope: %v", err)
	}
}

func TestUnreachablePeerIs503(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	err := newClient(url).Do(context.Background(), Request{Method: "POST", Path: "/x"}, nil)
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindUnavailable || e.Message != "peer service unavailable" {
		t.Fatalf("got %v", err)
	}
}

// A peer refusing our internal token is a deployment fault: it must not reach the public as
// a 401 with the peer's wording.
func TestTokenRejectionIsInternal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		if r.URL.Path == "/token" {
			_, _ = w.Write([]byte(`{"error":"` + identity.MsgTokenInvalid + `"}`))
			return
		}
		_, _ = w.Write([]byte(`{"error":"invalid email or password"}`))
	}))
	defer srv.Close()
	c := newClient(srv.URL)
	if e, ok := errs.As(c.Do(context.Background(), Request{Method: "GET", Path: "/token"}, nil)); !ok || e.Kind != errs.KindInternal || e.Message != "internal server error" {
		t.Fatalf("token refusal: %+v", e)
	}
	if e, ok := errs.As(c.Do(context.Background(), Request{Method: "GET", Path: "/login"}, nil)); !ok || e.Kind != errs.KindUnauthenticated || e.Message != "invalid email or password" {
		t.Fatalf("business 401: %+v", e)
	}
}
