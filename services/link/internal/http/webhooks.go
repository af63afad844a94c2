package http

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/link/internal/webhooks"
)

// registerWebhooks mounts the webhook routes behind the internal token.
func registerWebhooks(app *fiber.App, keys *identity.Keys, hooks *webhooks.Service) {
	h := webhookHandlers{hooks: hooks}
	g := app.Group("/internal/webhooks", identity.Require(keys))
	g.Post("/", h.create)
	g.Get("/", h.list)
	g.Delete("/:id", h.delete)
	g.Post("/:id/test", h.test)
	g.Get("/:id/deliveries", h.deliveries)
}

type webhookHandlers struct{ hooks *webhooks.Service }

func (h webhookHandlers) create(c *fiber.Ctx) error {
	var req link.WebhookCreateRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	out, err := h.hooks.Create(c.UserContext(), identity.CallerOf(c), req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h webhookHandlers) list(c *fiber.Ctx) error {
	out, err := h.hooks.List(c.UserContext(), identity.CallerOf(c))
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h webhookHandlers) delete(c *fiber.Ctx) error {
	if err := h.hooks.Delete(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id"))); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "deleted"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h webhookHandlers) test(c *fiber.Ctx) error {
	if err := h.hooks.Test(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id"))); err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"status": "queued"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h webhookHandlers) deliveries(c *fiber.Ctx) error {
	out, err := h.hooks.Deliveries(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id")),
		func(k string) string { return strings.Clone(c.Query(k)) })
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}
