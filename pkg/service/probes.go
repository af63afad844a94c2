package service

import (
	"context"
	"fmt"
	"net"

	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/server"
)

// DatastoreConfig is the configuration of a service that so far only owns its datastores.
type DatastoreConfig struct {
	config.Service
	config.Mongo
	config.Redis
}

// ServeProbes runs a service whose routes are still to come: it connects to its own database
// and Redis and serves /healthz and /readyz on addr (default defaultAddr) until ctx ends.
func ServeProbes(ctx context.Context, rt Runtime, name, defaultAddr string) error {
	cfg, err := config.Load[DatastoreConfig]()
	if err != nil {
		return err
	}
	config.Defaults(&cfg.Service, &cfg.Mongo, defaultAddr, "linkmesh_"+name)
	if err := cfg.Service.Validate(); err != nil {
		return err
	}
	rt.Logger.Info("starting", "config", cfg)
	ds, err := OpenDatastores(ctx, cfg.Mongo, cfg.Redis, rt.TracerProvider)
	if err != nil {
		return err
	}
	defer ds.Close()
	srv := server.New(server.Options{Name: name, Logger: rt.Logger, TracerProvider: rt.TracerProvider, Ready: ds.Checks()})
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return srv.Serve(ctx, ln, cfg.ShutdownDrain)
}
