package redirect

import (
	"time"

	"github.com/linkmesh/linkmesh/services/gateway/internal/clicks"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clientip"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

// Handler answers GET and HEAD /{code}.
type Handler struct {
	cache  *Cache
	now    func(c *fiber.Ctx) time.Time
	clicks Recorder
	ips    *clientip.Resolver
}

// Recorder takes the visits that count as clicks; *clicks.Recorder satisfies it. Record
// must not block, and must copy what it keeps of the visit's strings before it returns.
type Recorder interface {
	Record(v clicks.Visit)
}

// NewHandler serves redirects from cache. Each GET answered 302 is handed to rec (when not
// nil), with the client address ips finds.
func NewHandler(cache *Cache, rec Recorder, ips *clientip.Resolver) *Handler {
	return &Handler{cache: cache, now: requestTime, clicks: rec, ips: ips}
}

// requestTime is when the server began handling the request; fasthttp has already read the
// clock for it.
func requestTime(c *fiber.Ctx) time.Time { return c.Context().Time() }

// Serve answers 302 to the destination, or 404 unknown, 403 disabled, 410 expired. Every
// answer is private and uncacheable, so each visit reaches us and is counted.
func (h *Handler) Serve(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "private, no-store")
	now := h.now(c)
	e, err := h.Live(c, c.Params("code"), now)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderLocation, e.DestinationURL)
	if h.clicks != nil && c.Method() == fiber.MethodGet && e.ID != "" {
		h.record(c, e, now)
	}
	return c.SendStatus(fiber.StatusFound)
}

// Live returns the entry of code when a visit at now would be redirected, and otherwise the
// visit's answer: 404 unknown, 403 disabled, 410 expired.
func (h *Handler) Live(c *fiber.Ctx, code string, now time.Time) (*Entry, error) {
	// Implausible codes are answered without a cache entry or a network call, so a scan of
	// random paths cannot fill the cache with junk.
	if !link.PlausibleCode(code) {
		return nil, errs.NotFound(link.MsgNotFound)
	}
	e, err := h.cache.Lookup(c.UserContext(), code, now)
	if err != nil {
		return nil, err
	}
	switch {
	case !e.Found:
		return nil, errs.NotFound(link.MsgNotFound)
	case e.Status == link.StatusDisabled:
		return nil, errs.Forbidden("short link has been disabled")
	case e.Expired(now):
		return nil, errs.E(errs.KindGone, "short link has expired")
	}
	return e, nil
}

// record hands the visit over. Its header strings alias the request's buffers, which the
// server reuses once the handler returns; Record copies them before it returns.
func (h *Handler) record(c *fiber.Ctx, e *Entry, now time.Time) {
	v := clicks.Visit{LinkID: e.ID, OwnerID: e.OwnerID, Code: e.ShortCode, At: now,
		UserAgent: utils.UnsafeString(c.Request().Header.UserAgent())}
	if !clicks.NoClient(v.UserAgent) { // else no click: the recorder counts it and no more
		var viaProxy bool
		v.IP, viaProxy = h.ips.FromRequest(c)
		v.Referer = utils.UnsafeString(c.Request().Header.Referer())
		if viaProxy {
			v.EdgeCountry = utils.UnsafeString(c.Request().Header.Peek("CF-IPCountry"))
		}
	}
	h.clicks.Record(v)
}
