// Package http exposes the moderation service's internal API to the gateway.
package http

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/moderation/internal/requests"
)

// Register mounts the internal routes on app, all behind the internal token.
func Register(app *fiber.App, keys *identity.Keys, svc *requests.Service) {
	h := handlers{svc: svc}
	g := app.Group("/internal/moderation", identity.Require(keys))
	g.Post("/links/:code/permanent-requests", h.file)
	g.Get("/permanent-requests", h.list)
	g.Post("/permanent-requests/:id/resolve", h.resolve)
}

type handlers struct{ svc *requests.Service }

func (h handlers) file(c *fiber.Ctx) error {
	var body moderation.PermanentRequestBody
	if err := server.DecodeOptionalJSON(c, &body); err != nil {
		return err
	}
	r, err := h.svc.File(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("code")), body)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(moderation.RequestResponse{Request: r}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) list(c *fiber.Ctx) error {
	list, err := h.svc.List(c.UserContext(), identity.CallerOf(c), func(k string) string { return strings.Clone(c.Query(k)) })
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) resolve(c *fiber.Ctx) error {
	var req moderation.ResolveRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	r, err := h.svc.Resolve(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id")), req)
	if err != nil {
		return err
	}
	return c.JSON(moderation.RequestResponse{Request: r}, fiber.MIMEApplicationJSONCharsetUTF8)
}
