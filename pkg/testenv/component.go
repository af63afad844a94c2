package testenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caarlos0/env/v11"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/logging"
	"github.com/linkmesh/linkmesh/pkg/service"
)

// services are the names the internal key set of the tests has keys for.
var services = []string{identity.Gateway, config.Auth, config.Link, config.Analytics, config.Moderation, config.Quota}

var internal = sync.OnceValues(func() (identity.KeySet, error) { return identity.GenerateKeySet(services...) })

// Internal returns the internal key settings of service name from the one key set of this
// test process: its private key and every service's certificate.
func Internal(t testing.TB, name string) (key config.Secret, certs string) {
	t.Helper()
	set, err := internal()
	if err != nil {
		t.Fatal(err)
	}
	if set.Keys[name] == "" {
		t.Fatalf("no internal key for %q", name)
	}
	return config.Secret(set.Keys[name]), set.Certs
}

// Keys returns the internal token keys of service name: the gateway's to call services as the
// gateway does, a service's for fakes that check the tokens sent to them.
func Keys(t testing.TB, name string) *identity.Keys {
	t.Helper()
	key, certs := Internal(t, name)
	keys, err := identity.NewKeys(name, key.Reveal(), certs)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// ClientKey is the identity key the gateway would send for one client in component tests.
const ClientKey = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"

// Booted is a service started in-process by Boot.
type Booted struct {
	// URL is the service's base URL on loopback.
	URL string
	// Keys are the gateway's: what As signs with.
	Keys *identity.Keys
	name string
	// DB is the service's own database (nil for a service without one); it is a fresh
	// database, dropped when the test ends.
	DB   *mongo.Database
	Logs *LogBuffer
}

// Boot starts the service spec describes through the same boot path as production
// (service.Run), against the real test datastores, on a free loopback port, and stops it when
// the test ends. The configuration starts from its defaults; the datastores and Secret are
// filled in, then each configure function runs (they change the spec's Config the caller
// holds). Boot returns once the service answers /healthz.
func Boot(t testing.TB, spec service.Spec, configure ...func()) *Booted {
	t.Helper()
	mongoURI, redisURL := URIs(t)
	// The defaults alone: the host's LINKMESH_* variables must not leak into a test.
	if err := env.ParseWithOptions(spec.Config, env.Options{Environment: map[string]string{}}); err != nil {
		t.Fatalf("default config: %v", err)
	}
	common := spec.Config.Common()
	common.InternalKey, common.InternalCerts = Internal(t, spec.Name)
	common.LogLevel = "info"
	b := &Booted{Logs: &LogBuffer{}, name: spec.Name, Keys: Keys(t, identity.Gateway)}
	if m := service.MongoOf(spec.Config); m != nil {
		b.DB = Mongo(t)
		m.URI, m.Database = config.Secret(mongoURI), b.DB.Name()
	}
	if r := service.RedisOf(spec.Config); r != nil {
		r.URL = config.Secret(redisURL)
	}
	for _, f := range configure {
		f()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.URL = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	rt := service.Runtime{Logger: logging.New(b.Logs, spec.Name, 0), TracerProvider: noop.NewTracerProvider(), Listener: ln}
	go func() { done <- service.Run(ctx, spec, rt) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s stopped with: %v", spec.Name, err)
		}
		if strings.Contains(b.Logs.String(), "PRIVATE KEY") {
			t.Errorf("the internal key reached the logs of %s", spec.Name)
		}
	})
	if err := b.waitHealthy(done); err != nil {
		t.Fatalf("boot %s: %v\nlogs:\n%s", spec.Name, err, b.Logs.String())
	}
	return b
}

// waitHealthy polls /healthz until it answers 200, Run fails, or 30 s pass.
func (b *Booted) waitHealthy(done chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			done <- err // for the cleanup
			if err == nil {
				err = errors.New("stopped before serving")
			}
			return err
		default:
		}
		if resp, err := http.Get(b.URL + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("no healthy answer within 30s")
}

// As returns a context whose internal calls act for caller as the gateway names it, with
// ClientKey and a test User-Agent unless the caller names its own. A service the gateway does
// not call (quota, analytics) gets the caller the way it does in production: passed on by a
// service that calls it.
func (b *Booted) As(t testing.TB, caller identity.Caller) context.Context {
	t.Helper()
	if caller.IPHash == "" {
		caller.IPHash = ClientKey
	}
	if caller.UserAgent == "" {
		caller.UserAgent = "component-test/1.0"
	}
	if caller.UserID == "" {
		caller.Role = identity.RoleAnonymous
	}
	ctx, err := b.Keys.WithCaller(context.Background(), caller)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(identity.Calls[identity.Gateway], b.name) {
		return ctx
	}
	for _, via := range identity.Calls[identity.Gateway] {
		if slices.Contains(identity.Calls[via], b.name) {
			tok, err := identity.TokenFor(ctx, via)
			if err != nil {
				t.Fatal(err)
			}
			return Keys(t, via).Received(context.Background(), tok)
		}
	}
	t.Fatalf("no path of calls from the gateway reaches %s", b.name)
	return nil
}

// Anonymous is As for a caller without a session.
func (b *Booted) Anonymous(t testing.TB) context.Context { return b.As(t, identity.Caller{}) }

// Response is a raw answer of Do.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends a raw request with the internal token ctx's caller has for this service (if any),
// for what a typed client does not show: statuses, headers, malformed bodies.
func (b *Booted) Do(t testing.TB, ctx context.Context, method, path, body string) Response {
	t.Helper()
	tok, err := identity.TokenFor(ctx, b.name)
	if err != nil {
		t.Fatal(err)
	}
	return b.DoWithToken(t, tok, method, path, body)
}

// DoWithToken sends a raw request with token as its bearer token (none when empty). The
// answer is read while the request is still being written, on a connection of its own: a
// server that refuses a body too large answers and closes before taking all of it, and the
// answer is what the test wants, not the write error.
func (b *Booted) DoWithToken(t testing.TB, token, method, path, body string) Response {
	t.Helper()
	req, err := http.NewRequest(method, b.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	go func() { _ = req.Write(conn) }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(data)}
}

// WantFailure checks the status and that the body is the one-field envelope with msg.
func (r Response) WantFailure(t testing.TB, status int, msg string) {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal([]byte(r.Body), &env); err != nil || len(env) != 1 || env["error"] != msg || r.Status != status {
		t.Fatalf("got %d %s; want %d {\"error\":%q}", r.Status, r.Body, status, msg)
	}
}

// LogBuffer collects a service's log lines; the server writes from several goroutines.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// PeerCaller is what a fake peer service reads from a call made to it: the caller named by the
// call's bearer token, verified with the keys of the service the path belongs to
// (/internal/<service>/…, /internal/links/… and /internal/admin/links/… being link's).
func PeerCaller(t testing.TB, r *http.Request) (identity.Caller, error) {
	t.Helper()
	rest, ok := strings.CutPrefix(r.URL.Path, "/internal/")
	if !ok {
		return identity.Caller{}, fmt.Errorf("%s is no internal route", r.URL.Path)
	}
	rest = strings.TrimPrefix(rest, "admin/")
	name, _, _ := strings.Cut(rest, "/")
	if name == "links" {
		name = config.Link
	}
	if !slices.Contains(services[1:], name) {
		return identity.Caller{}, fmt.Errorf("%s belongs to no service", r.URL.Path)
	}
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return Keys(t, name).Verify(tok)
}

// RefusesConfig checks a service's configuration loading: with the environment base, load
// succeeds; with base overlaid by each case's variables, it fails.
func RefusesConfig(t *testing.T, base map[string]string, cases map[string]map[string]string, load func() error) {
	t.Helper()
	setAll := func(t *testing.T, env map[string]string) {
		for k, v := range env {
			t.Setenv(k, v)
		}
	}
	t.Run("base", func(t *testing.T) {
		setAll(t, base)
		if err := load(); err != nil {
			t.Fatalf("the base environment is refused: %v", err)
		}
	})
	for name, env := range cases {
		t.Run(name, func(t *testing.T) {
			setAll(t, base)
			setAll(t, env)
			if err := load(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
