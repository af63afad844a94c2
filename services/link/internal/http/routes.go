// Package http exposes the link service's internal API to the gateway.
package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
)

// Register mounts the internal routes on app, all behind the internal token.
func Register(app *fiber.App, keys *identity.Keys, svc *links.Service) {
	h := handlers{svc: svc}
	g := app.Group("/internal/links", identity.Require(keys))
	g.Post("/", h.create)
	g.Get("/:code/resolve", h.resolve)
	g.Get("/:code/info", h.info)
}

type handlers struct{ svc *links.Service }

func (h handlers) create(c *fiber.Ctx) error {
	var req link.CreateRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	l, err := h.svc.Create(c.UserContext(), identity.CallerOf(c), req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(link.Created{
		ShortCode: l.ShortCode, ShortURL: h.svc.ShortURL(l.ShortCode), DestinationURL: l.DestinationURL,
		ExpiresAt: l.ExpiresAt, CreatedAt: l.CreatedAt,
	}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) resolve(c *fiber.Ctx) error {
	r, err := h.svc.Resolve(c.UserContext(), c.Params("code"))
	if err != nil {
		return err
	}
	return c.JSON(r, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) info(c *fiber.Ctx) error {
	info, err := h.svc.Info(c.UserContext(), c.Params("code"))
	if err != nil {
		return err
	}
	return c.JSON(info, fiber.MIMEApplicationJSONCharsetUTF8)
}
