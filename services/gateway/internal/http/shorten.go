package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/ratelimit"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/gateway/internal/session"
)

// shorten creates a link. The gateway does only the edge's part: an anonymous caller must
// pass the captcha; who is calling (session.Optional signed the caller's token, with its
// identity key) travels to the link service, which applies every rule and the quota.
func (h *handlers) shorten(c *fiber.Ctx) error {
	var req link.ShortenRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	if _, signedIn := session.UserOf(c); !signedIn {
		if err := h.Captcha.Verify(ctx, req.CaptchaToken); err != nil {
			return err
		}
	}
	created, err := h.Links.Create(ctx, link.CreateRequest{URL: req.URL, ExpirationDays: req.ExpirationDays, CustomCode: req.CustomCode,
		IdempotencyKey: c.Get("Idempotency-Key")})
	if err != nil {
		return err
	}
	if created.Quota != nil {
		ratelimit.Set(c, *created.Quota)
	}
	return c.Status(fiber.StatusCreated).JSON(created.Created, fiber.MIMEApplicationJSONCharsetUTF8)
}

// bulk creates up to 100 links for a signed-in caller; the link service checks and creates
// each item as one shorten would, with one reservation and one insert for all of them.
func (h *handlers) bulk(c *fiber.Ctx) error {
	var req link.BulkRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	req.IdempotencyKey = c.Get("Idempotency-Key")
	out, err := h.Links.Bulk(c.UserContext(), req)
	if err != nil {
		return err
	}
	if out.Quota != nil {
		ratelimit.Set(c, *out.Quota)
	}
	return c.JSON(link.BulkResponse{Results: out.Results}, fiber.MIMEApplicationJSONCharsetUTF8)
}
