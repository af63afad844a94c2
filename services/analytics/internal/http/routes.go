// Package http exposes the analytics service's internal API: a link's analytics (asked by
// the link service once it has checked ownership), click totals, and the purge.
package http

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/analytics/internal/store"
)

// Register mounts the internal routes on app, all behind the internal token.
func Register(app *fiber.App, keys *identity.Keys, st *store.Store, now func() time.Time) {
	h := handlers{st: st, now: now}
	caller := identity.Require(keys)
	g := app.Group("/internal/analytics")
	g.Get("/links/:id", caller, h.link)
	g.Post("/counts", caller, h.counts)
	g.Get("/totals", caller, h.totals)
	// The link service acts as itself here, finishing a permanent deletion.
	g.Delete("/links/:id", identity.Require(keys, config.Link), h.purge)
}

type handlers struct {
	st  *store.Store
	now func() time.Time
}

func (h handlers) link(c *fiber.Ctx) error {
	days, err := analytics.ParseDays(c.Query("days"))
	if err != nil {
		return err
	}
	to := h.now().UTC()
	from := to.AddDate(0, 0, -(days - 1))
	out, err := h.st.LinkAnalytics(c.UserContext(), strings.Clone(c.Params("id")), strings.Clone(c.Query("code")), from, to)
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) counts(c *fiber.Ctx) error {
	var req analytics.CountsRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	if len(req.LinkIDs) > analytics.MaxCountLinks {
		return errs.Invalid("link_ids holds at most %d ids", analytics.MaxCountLinks)
	}
	out, err := h.st.Counts(c.UserContext(), req.OwnerID, req.LinkIDs)
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

// purge deletes a link's analytics, for a moderator or for the link service finishing a
// permanent deletion.
func (h handlers) purge(c *fiber.Ctx) error {
	if caller := identity.CallerOf(c); !caller.AtLeastModerator() && !caller.IsService(config.Link) {
		return errs.Forbidden("insufficient permissions")
	}
	if err := h.st.Purge(c.UserContext(), strings.Clone(c.Params("id"))); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// totals answers the admin overview's click counters, for moderators.
func (h handlers) totals(c *fiber.Ctx) error {
	if !identity.CallerOf(c).AtLeastModerator() {
		return errs.Forbidden("moderator role required")
	}
	out, err := h.st.Totals(c.UserContext(), h.now())
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}
