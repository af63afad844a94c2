// Command gateway runs linkmesh's public entry: the REST API under /api and the redirects.
package main

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/gateway/internal/app"
	"github.com/linkmesh/linkmesh/services/gateway/internal/config"
)

func main() { service.Main("gateway", run) }

func run(ctx context.Context, rt service.Runtime) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	rt.Logger.Info("starting", "config", cfg)
	a, err := app.New(ctx, cfg, rt.Logger, rt.TracerProvider)
	if err != nil {
		return err
	}
	return service.Listen(ctx, cfg.ListenAddr, a.Serve, a.Close)
}
