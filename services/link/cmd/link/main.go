// Command link runs the link service: creation, resolution and public information of links.
package main

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/link/internal/app"
	"github.com/linkmesh/linkmesh/services/link/internal/config"
)

func main() { service.Main("link", run) }

func run(ctx context.Context, rt service.Runtime) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	rt.Logger.Info("starting", "config", cfg)
	a, err := app.New(ctx, cfg, app.Deps{Logger: rt.Logger, TracerProvider: rt.TracerProvider})
	if err != nil {
		return err
	}
	return service.Listen(ctx, cfg.ListenAddr, a.Serve, a.Close)
}
