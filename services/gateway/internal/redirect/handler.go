package redirect

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

// Handler answers GET and HEAD /{code}.
type Handler struct {
	cache *Cache
	now   func(c *fiber.Ctx) time.Time
}

// NewHandler serves redirects from cache.
func NewHandler(cache *Cache) *Handler { return &Handler{cache: cache, now: requestTime} }

// requestTime is when the server began handling the request; fasthttp has already read the
// clock for it.
func requestTime(c *fiber.Ctx) time.Time { return c.Context().Time() }

// Serve answers 302 to the destination, or 404 unknown, 403 disabled, 410 expired. Every
// answer is private and uncacheable, so each visit reaches us and is counted.
func (h *Handler) Serve(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "private, no-store")
	code := c.Params("code")
	// Implausible codes are answered without a cache entry or a network call, so a scan of
	// random paths cannot fill the cache with junk.
	if !link.PlausibleCode(code) {
		return errs.NotFound(link.MsgNotFound)
	}
	now := h.now(c)
	e, err := h.cache.Lookup(c.UserContext(), code, now)
	if err != nil {
		return err
	}
	switch {
	case !e.Found:
		return errs.NotFound(link.MsgNotFound)
	case e.Status == link.StatusDisabled:
		return errs.Forbidden("short link has been disabled")
	case e.Expired(now):
		return errs.E(errs.KindGone, "short link has expired")
	}
	c.Set(fiber.HeaderLocation, e.DestinationURL)
	return c.SendStatus(fiber.StatusFound)
}
