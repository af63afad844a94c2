// Package service is the one boot path of every linkmesh service. Main reads the service's
// configuration once, sets up logging and tracing, and calls Run, which opens what every
// service has (datastores, identity keys, the HTTP server), hands them to the service's own
// wiring, then serves with its workers until the context ends, drains and closes. Component
// tests call Run too, on their own listener.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.opentelemetry.io/otel/trace"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/httpclient"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/logging"
	"github.com/linkmesh/linkmesh/pkg/metrics"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/pkg/telemetry"
)

// Config is a service's configuration: a pointer to a struct that embeds config.Service
// and, as the service needs them, config.Mongo, config.Redis, config.Peers and
// config.Public. The boot path fills and checks those shared parts; Validate checks the
// service's own settings and LogValue lists them.
type Config interface {
	Common() *config.Service
	Validate() error
	slog.LogValuer
}

// Spec describes a service to the boot path.
type Spec struct {
	// Name is the service's name in logs, traces and the table of default addresses.
	Name string
	// Config is filled from the environment by Main (tests fill it themselves).
	Config Config
	// Wire builds the service on what the boot path opened: it registers routes on
	// env.Server and returns its workers. Nil serves the probes only.
	Wire func(ctx context.Context, env *Env) (Parts, error)
	// Schema is the schema of the service's own database, when it has one.
	Schema *Schema
}

// Schema is a service's database schema: Version is the one its code reads, Migrate brings a
// database to it (its data steps, then its indexes). `<service> migrate` runs Migrate and
// records Version as applied; a serving replica only checks it (mongodb.CheckSchema) and
// refuses to start on another, so no replica ever waits for an index build at start.
type Schema struct {
	Version int
	// ReadableFrom is the oldest schema version whose code still serves on this one, when the
	// steps up to Version only added what older code ignores (expand before contract); 0
	// means Version: replicas of an older release refuse it.
	ReadableFrom int
	Migrate      func(ctx context.Context, db *mongo.Database) error
}

// For is the Spec of a service whose wiring takes its own config type, so that each service
// states only its name, its config and its wiring.
func For[C Config](name string, cfg C, wire func(ctx context.Context, cfg C, env *Env) (Parts, error)) Spec {
	return Spec{Name: name, Config: cfg, Wire: func(ctx context.Context, env *Env) (Parts, error) {
		return wire(ctx, cfg, env)
	}}
}

// Env is what the boot path opened for a service's wiring.
type Env struct {
	Name           string
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
	// Keys verify (and, in the gateway, sign) internal identity tokens.
	Keys   *identity.Keys
	Stores *Datastores
	Server *server.Server
	// Metrics takes the service's own metrics; they are served when LINKMESH_METRICS_ADDR
	// is set.
	Metrics *metrics.Registry
}

// Peer returns a traced, retrying client of another service at baseURL; timeout 0 keeps the
// client's default deadline.
func (e *Env) Peer(name, baseURL string, timeout time.Duration) *httpclient.Client {
	return httpclient.New(httpclient.Options{Service: name, BaseURL: baseURL, TracerProvider: e.TracerProvider, Timeout: timeout})
}

// Parts are what a service's wiring adds to the boot path.
type Parts struct {
	// Workers run beside the server and are stopped once it has drained.
	Workers []func(context.Context)
	// Close releases what the wiring opened beyond the datastores; it runs after the
	// workers stop.
	Close func()
}

// Runtime is the process around a service: Main builds it from the environment, component
// tests build their own.
type Runtime struct {
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
	// Listener, when set, is served instead of listening on the configured address.
	Listener net.Listener
}

// Main runs spec until SIGINT or SIGTERM and exits non-zero if it fails. With the argument
// `migrate` it migrates the service's database instead (see Schema) and exits.
func Main(spec Spec) {
	run := start
	if len(os.Args) > 1 {
		if os.Args[1] != "migrate" || len(os.Args) > 2 {
			fmt.Fprintf(os.Stderr, "usage: %s [migrate]\n", spec.Name)
			os.Exit(2)
		}
		run = migrateMain
	}
	if err := run(spec); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", spec.Name, err)
		os.Exit(1)
	}
}

func start(spec Spec) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Load(spec.Name, spec.Config); err != nil {
		return err
	}
	level, err := config.ParseLogLevel(spec.Config.Common().LogLevel)
	if err != nil {
		return err
	}
	log := logging.New(os.Stdout, spec.Name, level)
	tp, shutdown, err := telemetry.Setup(ctx, spec.Name)
	if err != nil {
		return err
	}
	defer func() {
		if err := shutdown(context.Background()); err != nil {
			log.Error("flush traces", "err", err)
		}
	}()
	if err := Run(ctx, spec, Runtime{Logger: log, TracerProvider: tp}); err != nil {
		log.Error("stopped", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}

// Run fills and validates spec's configuration, opens its datastores and server, wires the
// service, and serves until ctx ends; everything opened is released on every path out.
func Run(ctx context.Context, spec Spec, rt Runtime) (err error) {
	served := false
	defer func() {
		if !served && rt.Listener != nil {
			_ = rt.Listener.Close() // handed over, so ours to close on the way out
		}
	}()
	cfg := spec.Config
	if err := prepare(spec.Name, cfg); err != nil {
		return err
	}
	rt.Logger.Info("starting", "common", commonLogValue(cfg), "config", cfg)
	keys, err := identity.NewKeys(spec.Name, cfg.Common().InternalKey.Reveal(), cfg.Common().InternalCerts)
	if err != nil {
		return fmt.Errorf("LINKMESH_INTERNAL_KEY, LINKMESH_INTERNAL_CERTS: %w", err)
	}
	stores, err := openDatastores(ctx, cfg, rt.TracerProvider)
	if err != nil {
		return err
	}
	if spec.Schema != nil && stores.DB != nil {
		if err := mongodb.CheckSchema(ctx, stores.DB, spec.Name, spec.Schema.Version); err != nil {
			stores.Close()
			return err
		}
		ctx = mongodb.SchemaChecked(ctx)
	}
	parts := Parts{}
	release := func() {
		if parts.Close != nil {
			parts.Close()
		}
		stores.Close()
	}
	reg := metrics.New(spec.Name)
	var measure *metrics.HTTP
	if cfg.Common().MetricsAddr != "" {
		measure = reg.HTTP()
	}
	srv := server.New(server.Options{Name: spec.Name, Logger: rt.Logger, TracerProvider: rt.TracerProvider,
		Dependencies: stores.Checks(), Classify: stores.classifiers(), Metrics: measure})
	if spec.Wire != nil {
		e := &Env{Name: spec.Name, Logger: rt.Logger, TracerProvider: rt.TracerProvider, Keys: keys, Stores: stores, Server: srv, Metrics: reg}
		if parts, err = spec.Wire(ctx, e); err != nil {
			release()
			return fmt.Errorf("wire %s: %w", spec.Name, err)
		}
	}
	// The side listeners first: should the service's own fail next, they are the ones to
	// close.
	workers := slices.Clip(parts.Workers)
	var side []net.Listener
	closeSide := func() {
		for _, l := range side {
			_ = l.Close()
		}
	}
	for _, l := range []struct {
		setting, addr string
		serve         func(net.Listener, *slog.Logger) func(context.Context)
	}{
		{"LINKMESH_DEBUG_ADDR", cfg.Common().DebugAddr, debugServer},
		{"LINKMESH_METRICS_ADDR", cfg.Common().MetricsAddr, metricsServer(reg)},
	} {
		if l.addr == "" {
			continue
		}
		sln, err := net.Listen("tcp", l.addr)
		if err != nil {
			closeSide()
			release()
			return fmt.Errorf("listen %s (%s): %w", l.addr, l.setting, err)
		}
		side = append(side, sln)
		workers = append(workers, l.serve(sln, rt.Logger))
	}
	ln := rt.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cfg.Common().ListenAddr); err != nil {
			closeSide()
			release()
			return fmt.Errorf("listen %s: %w", cfg.Common().ListenAddr, err)
		}
	}
	served = true
	return serve(ctx, srv, ln, cfg.Common().ShutdownDrain, release, workers)
}

// serve runs srv on ln and the workers beside it until ctx ends; the workers are stopped
// once the server has drained, then release runs.
func serve(ctx context.Context, srv *server.Server, ln net.Listener, drain time.Duration, release func(), workers []func(context.Context)) error {
	// The workers outlive ctx until the server has drained: requests still in flight may
	// hand them work (a producer's queue), which they must still take and flush.
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w(wctx) })
	}
	err := srv.Serve(ctx, ln, drain)
	stop()
	wg.Wait()
	release()
	return err
}

// debugServer serves Go's runtime profiles on ln until its context ends.
// Lock contention and blocking are sampled only while a profile of them is being taken
// (/debug/pprof/mutex?seconds=N, /debug/pprof/block?seconds=N): one in mutexFraction
// contended unlocks, a blocking event per blockRate of time blocked. The rest of the time
// they cost the service nothing.
func debugServer(ln net.Listener, log *slog.Logger) func(context.Context) {
	mux := http.NewServeMux()
	mux.Handle("/debug/pprof/mutex", sampling(func(on bool) {
		runtime.SetMutexProfileFraction(map[bool]int{true: mutexFraction}[on])
	}))
	mux.Handle("/debug/pprof/block", sampling(func(on bool) {
		runtime.SetBlockProfileRate(map[bool]int{true: int(blockRate)}[on])
	}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// A CPU profile runs as long as asked (default 30 s), so writes get no deadline.
	return sideServer(ln, &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, log, "runtime profiles")
}

// mutexFraction and blockRate are the sampling of lock contention and blocking while the
// runtime profiles are served.
const (
	mutexFraction = 10
	blockRate     = 10 * time.Microsecond
)

// sampling serves the named profile of its path with set(true) in force while it is taken:
// one profile at a time, so a second request waits for the first.
func sampling(set func(on bool)) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		set(true)
		defer set(false)
		pprof.Index(w, r)
	})
}

// metricsServer serves reg on ln (/metrics) until its context ends.
func metricsServer(reg *metrics.Registry) func(net.Listener, *slog.Logger) func(context.Context) {
	return func(ln net.Listener, log *slog.Logger) func(context.Context) {
		mux := http.NewServeMux()
		mux.Handle("/metrics", reg.Handler(log))
		return sideServer(ln, &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 15 * time.Second}, log, "metrics")
	}
}

// sideServer is the worker serving hs on ln, beside the service's own port, until its
// context ends.
func sideServer(ln net.Listener, hs *http.Server, log *slog.Logger, what string) func(context.Context) {
	return func(ctx context.Context) {
		go func() {
			<-ctx.Done()
			_ = hs.Close()
		}()
		log.Info("serving "+what, "addr", ln.Addr().String())
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+" server stopped", "err", err)
		}
	}
}
