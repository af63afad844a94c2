// Command quota runs the quota service: sliding-window counters behind internal routes.
package main

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/quota/internal/app"
	"github.com/linkmesh/linkmesh/services/quota/internal/config"
)

func main() {
	service.Main(app.Name, func(ctx context.Context, rt service.Runtime) error {
		cfg, err := config.Load()
		if err != nil {
			return err
		}
		rt.Logger.Info("starting", "config", cfg)
		a, err := app.New(ctx, cfg, rt)
		if err != nil {
			return err
		}
		return service.Listen(ctx, cfg.ListenAddr, a.Serve, a.Close)
	})
}
