package http

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/server"
)

// shorten creates a link for an anonymous caller: captcha, then one unit of the caller's
// quota, then the link service; the unit is given back if creation fails, so only successful
// creations count.
func (h *handlers) shorten(c *fiber.Ctx) error {
	var req link.ShortenRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx, err := h.anonymous(c)
	if err != nil {
		return err
	}
	addr := h.clientAddr(c)
	if err := h.Captcha.Verify(ctx, req.CaptchaToken, addr.String()); err != nil {
		return err
	}
	key := h.Keyer.Key(addr)
	res, err := h.Quota.Reserve(ctx, quota.ReserveRequest{Scope: quota.ScopeAnonymousCreate, Key: key})
	if err != nil {
		return err
	}
	if !res.Allowed {
		return errs.TooMany("anonymous link quota exceeded", time.Duration(res.RetryAfterSeconds)*time.Second)
	}
	created, err := h.Links.Create(ctx, link.CreateRequest{URL: req.URL, ExpirationDays: req.ExpirationDays, CustomCode: req.CustomCode})
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
