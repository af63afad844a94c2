// Package service is the start-up shared by every linkmesh command: signals, the JSON logger
// and tracing, then the service's own run function.
package service

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/logging"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/pkg/telemetry"
)

// Runtime is what every service gets before it builds itself.
type Runtime struct {
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
}

// Main runs run until SIGINT or SIGTERM and exits non-zero if it fails.
func Main(name string, run func(ctx context.Context, rt Runtime) error) {
	if err := start(name, run); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

func start(name string, run func(ctx context.Context, rt Runtime) error) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	common, err := config.Load[config.Service]()
	if err != nil {
		return err
	}
	log := logging.New(os.Stdout, name, common.LogLevel)
	tp, shutdown, err := telemetry.Setup(ctx, name)
	if err != nil {
		return err
	}
	defer func() {
		if err := shutdown(context.Background()); err != nil {
			log.Error("flush traces", "err", err)
		}
	}()
	if err := run(ctx, Runtime{Logger: log, TracerProvider: tp}); err != nil {
		log.Error("stopped", "err", err)
		return err
	}
	log.Info("stopped")
	return nil
}

// Serve runs srv on ln and the background workers beside it until ctx ends; the workers are
// stopped once the server has drained, then release runs.
func Serve(ctx context.Context, srv *server.Server, ln net.Listener, drain time.Duration, release func(), workers ...func(context.Context)) error {
	wctx, stop := context.WithCancel(ctx)
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

// Listen takes addr and hands it to serve. If the address cannot be taken, release frees
// what the service had already opened (datastore clients), since serve never ran.
func Listen(ctx context.Context, addr string, serve func(context.Context, net.Listener) error, release func()) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		release()
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	return serve(ctx, ln)
}
