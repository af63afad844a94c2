// Package app wires the moderation service on what the boot path opened; main and the
// component tests both start it with service.For.
package app

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/moderation/internal/config"
	modhttp "github.com/linkmesh/linkmesh/services/moderation/internal/http"
	"github.com/linkmesh/linkmesh/services/moderation/internal/requests"
	"github.com/linkmesh/linkmesh/services/moderation/internal/store"
)

// Wire builds the moderation service: its store (and indexes), the rules of its queues and
// audit log acting through the link service, the overview asking every owner of data, and
// the internal routes.
func Wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	st, err := store.New(ctx, env.Stores.DB)
	if err != nil {
		return service.Parts{}, err
	}
	svc := requests.NewService(st, requests.Peers{
		Links:  link.New(env.Peer(pkgconfig.Link, cfg.LinkURL, 0)),
		Users:  auth.New(env.Peer(pkgconfig.Auth, cfg.AuthURL, 0)),
		Clicks: analytics.New(env.Peer(pkgconfig.Analytics, cfg.AnalyticsURL, 0)),
		// Longer than the quota service takes to settle a reservation (5 s at most).
		Quota: quota.New(env.Peer(pkgconfig.Quota, cfg.QuotaURL, 6*time.Second)),
	}, func() string { return bson.NewObjectID().Hex() })
	modhttp.Register(env.Server.App(), env.Keys, svc)
	return service.Parts{}, nil
}
