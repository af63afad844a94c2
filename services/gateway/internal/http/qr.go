package http

import (
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/services/gateway/internal/qr"
)

// qrCode answers GET /api/links/{code}/qr: the QR code of the short URL of a link a visit
// would be redirected by (else the visit's 404, 403 or 410), cacheable for a day.
func (h *handlers) qrCode(c *fiber.Ctx) error {
	format, size, margin, err := qrParams(c)
	if err != nil {
		return err
	}
	e, err := h.Redirect.Live(c, c.Params("code"), time.Now())
	if err != nil {
		return err
	}
	img, err := qr.Draw(h.shortURL(e.ShortCode), format, size, margin)
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=86400")
	c.Set(fiber.HeaderContentType, qr.ContentType(format))
	return c.Send(img)
}

// qrParams reads format (svg or png, default png), size (pixels) and margin (modules).
func qrParams(c *fiber.Ctx) (format string, size, margin int, err error) {
	format = c.Query("format", qr.PNG)
	if format != qr.SVG && format != qr.PNG {
		return "", 0, 0, errs.Invalid("format must be svg or png")
	}
	if size, err = intParam(c, "size", qr.DefaultSize, qr.MinSize, qr.MaxSize); err != nil {
		return "", 0, 0, err
	}
	if margin, err = intParam(c, "margin", qr.DefaultMargin, 0, qr.MaxMargin); err != nil {
		return "", 0, 0, err
	}
	return format, size, margin, nil
}

// intParam reads the integer query parameter name, def when absent, within [lo, hi].
func intParam(c *fiber.Ctx, name string, def, lo, hi int) (int, error) {
	raw := c.Query(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		return 0, errs.Invalid("%s must be an integer between %d and %d", name, lo, hi)
	}
	return n, nil
}

// shortURL is the public address of code.
func (h *handlers) shortURL(code string) string {
	return strings.TrimRight(h.BaseURL, "/") + "/" + code
}
