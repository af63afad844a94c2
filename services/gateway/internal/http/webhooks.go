package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/paging"
	"github.com/linkmesh/linkmesh/pkg/server"
)

// The webhook routes: the link service, which owns link events, owns the webhooks.

func (h *handlers) createWebhook(c *fiber.Ctx) error {
	var req link.WebhookCreateRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	out, err := h.Links.CreateWebhook(c.UserContext(), req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) webhooks(c *fiber.Ctx) error {
	out, err := h.Links.Webhooks(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) deleteWebhook(c *fiber.Ctx) error {
	if err := h.Links.DeleteWebhook(c.UserContext(), c.Params("id")); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "deleted"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) testWebhook(c *fiber.Ctx) error {
	if err := h.Links.TestWebhook(c.UserContext(), c.Params("id")); err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"status": "queued"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) deliveries(c *fiber.Ctx) error {
	out, err := h.Links.Deliveries(c.UserContext(), c.Params("id"), passQuery(c, paging.Params()...))
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}
