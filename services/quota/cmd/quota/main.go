// Command quota runs the quota service: sliding-window counters behind internal routes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/linkmesh/linkmesh/services/quota/internal/app"
	"github.com/linkmesh/linkmesh/services/quota/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "quota:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	a, err := app.New(ctx, cfg, os.Stdout)
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	return a.Run(ctx)
}
