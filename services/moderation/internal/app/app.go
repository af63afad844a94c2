// Package app wires the moderation service on what the boot path opened; main and the
// component tests both start it with service.For.
package app

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	pkgconfig "github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/service"
	"github.com/linkmesh/linkmesh/services/moderation/internal/config"
	modhttp "github.com/linkmesh/linkmesh/services/moderation/internal/http"
	"github.com/linkmesh/linkmesh/services/moderation/internal/requests"
	"github.com/linkmesh/linkmesh/services/moderation/internal/store"
)

// Wire builds the moderation service: its store (and indexes), the permanent-request rules
// acting through the link service, and the internal routes.
func Wire(ctx context.Context, cfg *config.Config, env *service.Env) (service.Parts, error) {
	st, err := store.New(ctx, env.Stores.DB)
	if err != nil {
		return service.Parts{}, err
	}
	links := link.New(env.Peer(pkgconfig.Link, cfg.LinkURL, 0))
	svc := requests.NewService(st, links, func() string { return bson.NewObjectID().Hex() })
	modhttp.Register(env.Server.App(), env.Keys, svc)
	return service.Parts{}, nil
}
