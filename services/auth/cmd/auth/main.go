// Command auth runs the auth service: accounts, password and identity-provider login,
// sessions, roles and the login audit trail, behind internal routes for the gateway.
package main

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/auth/internal/app"
	"github.com/linkmesh/linkmesh/services/auth/internal/config"
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
