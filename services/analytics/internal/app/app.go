// Package app wires the analytics service on what the boot path opened; main and the
// component tests both start it with service.For.
package app

import (
	"context"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/pkg/stream"
	"github.com/linkmesh/linkmesh/services/analytics/internal/config"
	anhttp "github.com/linkmesh/linkmesh/services/analytics/internal/http"
	"github.com/linkmesh/linkmesh/services/analytics/internal/pipeline"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// Wire builds the analytics service: its store (schema and indexes), the consumer of the
// clicks stream with its recovery pass, and the internal routes.
func Wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	st, err := store.New(ctx, env.Stores.DB, cfg.ClickRetention)
	if err != nil {
		return service.Parts{}, err
	}
	now := time.Now
	consumer := &pipeline.Consumer{Store: st, Redis: env.Stores.Redis, Logger: env.Logger, Now: now,
		ClickBudget: cfg.ClickBudget, BudgetWindow: cfg.ClickBudgetWindow,
		Uncounted: env.Metrics.CounterVec("clicks_over_budget_total",
			"Visits redirected but not counted: beyond their client's click budget on the link.").WithLabelValues()}
	consumer.Measure(env.Metrics)
	worker, err := stream.NewWorker(stream.WorkerOptions{
		Client:    env.Stores.Redis,
		Stream:    analytics.Stream,
		Group:     pipeline.Group,
		Handler:   consumer.Handle,
		Logger:    env.Logger,
		BatchSize: pipeline.EntriesPerRead,
		// A dead replica's clicks are taken over after SealAge, when its batches may be
		// applied by another; a batch is stored and counted in far less.
		ClaimMinIdle:  pipeline.SealAge,
		ClaimInterval: 10 * time.Second,
	})
	if err != nil {
		return service.Parts{}, err
	}
	worker.Measure(env.Metrics)
	anhttp.Register(env.Server.App(), env.Keys, st, now)
	return service.Parts{Workers: []func(context.Context){worker.Run, consumer.RunRecovery}}, nil
}
