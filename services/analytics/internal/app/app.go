// Package app wires the analytics service on what the boot path opened; main and the
// component tests both start it with service.For.
package app

import (
	"context"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/mongodb"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/services/analytics/internal/config"
	anhttp "github.com/linkmesh/linkmesh/services/analytics/internal/http"
	"github.com/linkmesh/linkmesh/services/analytics/internal/pipeline"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// Wire builds the analytics service: its store (and indexes), the consumer of the clicks
// stream, the fold of stored clicks into rollups, the retention sweeper and the internal
// routes.
func Wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	st, err := store.New(ctx, env.Stores.DB)
	if err != nil {
		return service.Parts{}, err
	}
	now := time.Now
	worker, err := stream.NewWorker(stream.WorkerOptions{
		Client:  env.Stores.Redis,
		Stream:  analytics.Stream,
		Group:   pipeline.Group,
		Handler: pipeline.Handler(st, env.Stores.Redis, env.Logger, now),
		Logger:  env.Logger,
		// A dead replica's clicks are taken over after 30 s; a batch is stored in far less.
		ClaimMinIdle:  30 * time.Second,
		ClaimInterval: 10 * time.Second,
	})
	if err != nil {
		return service.Parts{}, err
	}
	worker.Measure(env.Metrics)
	folder := pipeline.Folder{Store: st, Redis: env.Stores.Redis, Logger: env.Logger, Now: now}
	folder.Measure(env.Metrics)
	sweeper := mongodb.Sweeper{What: "raw clicks", Interval: time.Hour, Now: now, Logger: env.Logger,
		Delete: func(ctx context.Context, now time.Time) (int64, error) {
			return st.DeleteOlderThan(ctx, now.Add(-cfg.ClickRetention))
		}}
	anhttp.Register(env.Server.App(), env.Keys, st, now)
	return service.Parts{Workers: []func(context.Context){worker.Run, folder.Run, sweeper.Run}}, nil
}
