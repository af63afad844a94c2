package service

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// internal is the key material of the services these tests boot; they boot as link.
var internal = func() identity.KeySet {
	set, err := identity.GenerateKeySet("gateway", "link")
	if err != nil {
		panic(err)
	}
	return set
}()

// secret is link's private key, which must never reach a log.
var secret = config.Secret(internal.Keys["link"])

// testConfig is a service without datastores, so the boot path runs without servers.
type testConfig struct {
	config.Service
	config.Peers
	Own    string `env:"LINKMESH_TEST_OWN" envDefault:"own-default"`
	reject bool
}

func (c *testConfig) Validate() error {
	if c.reject {
		return errors.New("own setting refused")
	}
	return nil
}

func (c *testConfig) LogValue() slog.Value { return slog.GroupValue(slog.String("own", c.Own)) }

func quiet() Runtime {
	return Runtime{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TracerProvider: noop.NewTracerProvider()}
}

// A service that cannot take its address must still release what its wiring opened.
func TestRunReleasesWhenTheAddressIsTaken(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	released := false
	cfg := &testConfig{Service: config.Service{ListenAddr: held.Addr().String(), LogLevel: "info", InternalKey: secret, InternalCerts: internal.Certs}}
	spec := Spec{Name: "link", Config: cfg, Wire: func(context.Context, *Env) (Parts, error) {
		return Parts{Close: func() { released = true }}, nil
	}}
	if err := Run(context.Background(), spec, quiet()); err == nil || !strings.Contains(err.Error(), "listen") || !released {
		t.Fatalf("err %v, released %v", err, released)
	}
}

func TestRunRefusesBadConfiguration(t *testing.T) {
	cases := map[string]func(*testConfig){
		"no internal key":  func(c *testConfig) { c.InternalKey = "" },
		"no certificates":  func(c *testConfig) { c.InternalCerts = "" },
		"another's key":    func(c *testConfig) { c.InternalKey = config.Secret(internal.Keys["gateway"]) },
		"bad log level":    func(c *testConfig) { c.LogLevel = "verbose" },
		"empty log level":  func(c *testConfig) { c.LogLevel = "" },
		"bad peer":         func(c *testConfig) { c.QuotaURL = "quota:8085" },
		"huge drain":       func(c *testConfig) { c.ShutdownDrain = time.Hour },
		"bad debug addr":   func(c *testConfig) { c.DebugAddr = "localhost" },
		"bad metrics addr": func(c *testConfig) { c.MetricsAddr = "9090" },
		"shared side port": func(c *testConfig) { c.MetricsAddr, c.DebugAddr = "127.0.0.1:9999", "127.0.0.1:9999" },
		"own setting":      func(c *testConfig) { c.reject = true },
	}
	// A service missing from the table of default addresses must name its own.
	t.Run("no default address", func(t *testing.T) {
		cfg := &testConfig{Service: config.Service{LogLevel: "info", InternalKey: secret, InternalCerts: internal.Certs}}
		rt := quiet()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		rt.Listener = ln
		if err := Run(context.Background(), Spec{Name: "unknown", Config: cfg}, rt); err == nil {
			t.Fatal("accepted")
		}
		// The listener handed over was closed on the way out.
		if _, err := ln.Accept(); err == nil {
			t.Fatal("the listener of a service that did not start was left open")
		}
	})
	for name, breakIt := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := &testConfig{Service: config.Service{LogLevel: "info", InternalKey: secret, InternalCerts: internal.Certs}}
			breakIt(cfg)
			wired := false
			spec := Spec{Name: "link", Config: cfg, Wire: func(context.Context, *Env) (Parts, error) { wired = true; return Parts{}, nil }}
			if err := Run(context.Background(), spec, quiet()); err == nil || wired {
				t.Fatalf("err %v, wired %v", err, wired)
			}
		})
	}
}

// Load fills what the environment leaves unset from the one table of defaults.
func TestLoadFillsDefaults(t *testing.T) {
	for _, k := range []string{"LINKMESH_LISTEN_ADDR", "LINKMESH_QUOTA_URL", "LINKMESH_AUTH_URL"} {
		t.Setenv(k, "")
	}
	t.Setenv("LINKMESH_LINK_URL", "http://link.internal:80")
	t.Setenv("LINKMESH_INTERNAL_KEY", string(secret))
	t.Setenv("LINKMESH_INTERNAL_CERTS", internal.Certs)
	cfg := &testConfig{}
	if err := Load(config.Moderation, cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.ListenAddr != "127.0.0.1:8084" || cfg.QuotaURL != "http://127.0.0.1:8085" || cfg.AuthURL != "http://127.0.0.1:8081" ||
		cfg.LinkURL != "http://link.internal:80" || cfg.Own != "own-default" || cfg.LogLevel != "info" {
		t.Fatalf("config %+v", cfg)
	}
}

// The shared settings are logged the same way for every service, secrets masked.
func TestCommonLogValueMasksSecrets(t *testing.T) {
	cfg := &datastoreConfig{Service: config.Service{InternalKey: secret, InternalCerts: internal.Certs, ListenAddr: "127.0.0.1:1"}}
	cfg.URI, cfg.Database = "mongodb://user:mongo-password@db/", "linkmesh_x"
	cfg.URL = "redis://:redis-password@cache/0"
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("starting", "common", commonLogValue(cfg), "config", cfg)
	out := buf.String()
	for _, leak := range []string{"PRIVATE KEY", "mongo-password", "redis-password"} {
		if strings.Contains(out, leak) {
			t.Fatalf("log leaks %q: %s", leak, out)
		}
	}
	if !strings.Contains(out, `"mongodb_database":"linkmesh_x"`) || !strings.Contains(out, `"listen_addr":"127.0.0.1:1"`) ||
		!strings.Contains(out, `"redis_url":"****"`) {
		t.Fatalf("log lacks the shared settings: %s", out)
	}
}

// Workers run while the server serves and stop after it drained; the wiring's Close runs
// after them. The start-up line carries the shared and the service's own settings, never
// the secret.
func TestRunServesWorkersAndCloses(t *testing.T) {
	var logs bytes.Buffer
	rt := quiet()
	rt.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rt.Listener = ln
	var started, stopped, closedAfterStop atomic.Bool
	cfg := &testConfig{Service: config.Service{LogLevel: "info", InternalKey: secret, InternalCerts: internal.Certs}, Own: "mine"}
	spec := Spec{Name: "link", Config: cfg, Wire: func(_ context.Context, env *Env) (Parts, error) {
		if env.Keys == nil || env.Server == nil || env.Stores == nil {
			t.Error("the boot path did not open keys, server and stores")
		}
		worker := func(wctx context.Context) {
			started.Store(true)
			<-wctx.Done()
			// The server has drained by now: it no longer answers.
			if resp, err := http.Get("http://" + ln.Addr().String() + "/healthz"); err == nil {
				resp.Body.Close()
				t.Error("the worker was stopped while the server still served")
			}
			stopped.Store(true)
		}
		return Parts{Workers: []func(context.Context){worker}, Close: func() { closedAfterStop.Store(stopped.Load()) }}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, spec, rt) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + ln.Addr().String() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 && started.Load() {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("service never became ready with its worker running")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !stopped.Load() || !closedAfterStop.Load() {
		t.Fatalf("worker stopped %v, closed after it %v", stopped.Load(), closedAfterStop.Load())
	}
	out := logs.String()
	if strings.Contains(out, "PRIVATE KEY") || !strings.Contains(out, `"listen_addr":"127.0.0.1:8082"`) ||
		!strings.Contains(out, `"quota_url":"http://127.0.0.1:8085"`) || !strings.Contains(out, `"own":"mine"`) {
		t.Fatalf("start-up line: %s", out)
	}
}

// datastoreConfig is a service configuration with nothing but the shared settings and the
// datastores.
type datastoreConfig struct {
	config.Service
	config.Datastores
}

func (*datastoreConfig) Validate() error      { return nil }
func (*datastoreConfig) LogValue() slog.Value { return slog.GroupValue() }

// With LINKMESH_METRICS_ADDR set, the service's metrics are served there, with what it
// registered itself, and not on its own port.
func TestRunServesMetricsOnTheirOwnListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	maddr := mln.Addr().String()
	mln.Close()
	rt := quiet()
	rt.Listener = ln
	cfg := &testConfig{Service: config.Service{LogLevel: "info", InternalKey: secret, InternalCerts: internal.Certs, MetricsAddr: maddr}}
	spec := Spec{Name: "link", Config: cfg, Wire: func(_ context.Context, env *Env) (Parts, error) {
		env.Metrics.CounterFunc("test_things_total", "Things.", func() float64 { return 7 })
		return Parts{}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, spec, rt) }()
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := get("http://" + ln.Addr().String() + "/readyz"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("service never became ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, body := get("http://" + maddr + "/metrics")
	for _, want := range []string{`linkmesh_test_things_total{service="link"} 7`, `linkmesh_ready{service="link"} 1`,
		`linkmesh_http_requests_total{code="200",method="GET",route="/readyz",service="link"}`, "go_goroutines"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics answered %d without %s:\n%s", code, want, body)
		}
	}
	if code, _ := get("http://" + ln.Addr().String() + "/metrics"); code == 200 {
		t.Error("the service's own port serves /metrics")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
