// Package http is the gateway's public API: it routes /api/* to the services, answers the
// redirect route, and is the only place the outside world reaches.
package http

import (
	"context"
	"log/slog"
	"net/netip"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/services/gateway/internal/captcha"
	"github.com/linkmesh/linkmesh/services/gateway/internal/clientip"
	"github.com/linkmesh/linkmesh/services/gateway/internal/redirect"
)

// Probe checks that a dependency can serve.
type Probe func(ctx context.Context) error

// Deps are the collaborators of the routes.
type Deps struct {
	Links    *link.Client
	Quota    *quota.Client
	Keys     *identity.Keys
	IPs      *clientip.Resolver
	Keyer    *clientip.Keyer
	Captcha  *captcha.Verifier
	Redirect *redirect.Handler
	// Health lists the services /api/health needs, by name.
	Health map[string]Probe
	Logger *slog.Logger
}

// Register mounts every public route on app.
func Register(app *fiber.App, d Deps) {
	h := &handlers{Deps: d}
	api := app.Group("/api")
	api.Get("/health", h.health)
	api.Post("/links/shorten", h.shorten)
	api.Get("/links/:code/info", h.info)

	app.Get("/:code", d.Redirect.Serve) // Fiber answers HEAD through the GET route
}

type handlers struct{ Deps }

// anonymous returns the request context carrying an anonymous caller's internal token.
func (h *handlers) anonymous(c *fiber.Ctx) (context.Context, error) {
	return h.Keys.WithCaller(c.UserContext(), identity.Anonymous)
}

// clientAddr is the caller's address per the trusted-proxy rules.
func (h *handlers) clientAddr(c *fiber.Ctx) netip.Addr {
	peer, _ := netip.AddrFromSlice(c.Context().RemoteIP())
	return h.IPs.ClientIP(peer, c.Get(fiber.HeaderXForwardedFor))
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
