// Package http is the gateway's public API: it routes /api/* to the services, answers the
// redirect route, and is the only place the outside world reaches.
package http

import (
	"context"
	"log/slog"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/services/gateway/internal/captcha"
	"github.com/linkmesh/linkmesh/services/gateway/internal/redirect"
	"github.com/linkmesh/linkmesh/services/gateway/internal/session"
)

// Probe checks that a dependency can serve.
type Probe func(ctx context.Context) error

// Deps are the collaborators of the routes.
type Deps struct {
	Links   *link.Client
	Quota   *quota.Client
	Auth    *auth.Client
	Gate    *session.Gate
	Captcha *captcha.Verifier
	// BaseURL and AllowedOrigins decide which origins may send cookie-carrying writes.
	BaseURL        string
	AllowedOrigins []string
	Redirect       *redirect.Handler
	// Health lists the services /api/health needs, by name.
	Health map[string]Probe
	Logger *slog.Logger
}

// Register mounts every public route on app.
func Register(app *fiber.App, d Deps) {
	h := &handlers{Deps: d}
	api := app.Group("/api", session.SameSite(d.BaseURL, d.AllowedOrigins))
	api.Get("/health", h.health)
	api.Post("/links/shorten", d.Gate.Optional(), h.shorten)
	api.Get("/links/:code/info", h.info)
	h.registerAuth(api)
	h.registerProtected(api)

	app.Get("/:code", d.Redirect.Serve) // Fiber answers HEAD through the GET route
}

type handlers struct{ Deps }

// anonymous returns the request context carrying an anonymous caller's internal token.
func (h *handlers) anonymous(c *fiber.Ctx) (context.Context, error) {
	return h.Gate.As(c, identity.Anonymous)
}

func (h *handlers) info(c *fiber.Ctx) error {
	ctx, err := h.anonymous(c)
	if err != nil {
		return err
	}
	info, err := h.Links.Info(ctx, c.Params("code"))
	if err != nil {
		return err
	}
	return c.JSON(info, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) health(c *fiber.Ctx) error {
	for name, probe := range h.Health {
		if err := probe(c.UserContext()); err != nil {
			return errs.Unavailable(name+" service unavailable", err)
		}
	}
	return c.JSON(fiber.Map{"status": "ok"}, fiber.MIMEApplicationJSONCharsetUTF8)
}
