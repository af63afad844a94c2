package http

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/gateway/internal/session"
)

// shorten creates a link. A signed-in caller (session.Optional admitted them) creates it as
// owner; an anonymous one passes the captcha, then takes one unit of the anonymous quota,
// which is given back if creation fails, so only successful creations count.
func (h *handlers) shorten(c *fiber.Ctx) error {
	var req link.ShortenRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx := c.UserContext()
	create := link.CreateRequest{URL: req.URL, ExpirationDays: req.ExpirationDays, CustomCode: req.CustomCode}
	if _, signedIn := session.UserOf(c); signedIn {
		created, err := h.Links.Create(ctx, create)
		if err != nil {
			return err
		}
		return c.Status(fiber.StatusCreated).JSON(created, fiber.MIMEApplicationJSONCharsetUTF8)
	}
	// Refused before the captcha and the quota are spent on a request that cannot succeed.
	if req.CustomCode != nil {
		return errs.Forbidden("custom_code requires an account")
	}
	if err := h.Captcha.Verify(ctx, req.CaptchaToken); err != nil {
		return err
	}
	key := h.Gate.IdentityKey(c)
	res, err := h.Quota.Reserve(ctx, quota.ReserveRequest{Scope: quota.ScopeAnonymousCreate, Key: key})
	if err != nil {
		return err
	}
	if !res.Allowed {
		return errs.TooMany("anonymous link quota exceeded", time.Duration(res.RetryAfterSeconds)*time.Second)
	}
	created, err := h.Links.Create(ctx, create)
	if err != nil {
		// The caller may have gone; the unit must be returned regardless.
		rel := quota.ReleaseRequest{Scope: quota.ScopeAnonymousCreate, Key: key, ID: res.ID}
		if rerr := h.Quota.Release(context.WithoutCancel(ctx), rel); rerr != nil {
			h.Logger.ErrorContext(ctx, "release quota unit", "err", rerr)
		}
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(created, fiber.MIMEApplicationJSONCharsetUTF8)
}
