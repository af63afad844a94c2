// Package http exposes the link service's internal API to the gateway.
package http

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/link/internal/links"
	"github.com/linkmesh/linkmesh/services/link/internal/webhooks"
)

// Register mounts the internal routes on app, all behind the internal token.
func Register(app *fiber.App, keys *identity.Keys, svc *links.Service, hooks *webhooks.Service) {
	registerWebhooks(app, keys, hooks)
	h := handlers{svc: svc}
	g := app.Group("/internal/links", identity.Require(keys))
	g.Post("/", h.create)
	g.Post("/bulk", h.bulk)
	g.Get("/", h.mine)
	g.Get("/dashboard", h.dashboard)
	g.Get("/export", h.export)
	// Everything of the caller's, their account going: links (purged) and webhooks.
	g.Delete("/owners/me", func(c *fiber.Ctx) error {
		caller := identity.CallerOf(c)
		if err := svc.DeleteAll(c.UserContext(), caller); err != nil {
			return err
		}
		if err := hooks.DeleteAll(c.UserContext(), caller); err != nil {
			return err
		}
		return c.JSON(fiber.Map{"status": "deleted"}, fiber.MIMEApplicationJSONCharsetUTF8)
	})
	g.Get("/:code/resolve", h.resolve)
	g.Get("/:code/info", h.info)
	g.Post("/:code/renew", h.renew)
	g.Get("/:code/owned", h.owned)
	g.Get("/:code/analytics", h.analytics)
	g.Put("/:code/auto-renew", h.autoRenew)
	g.Patch("/:code", h.edit)
	g.Delete("/:code", h.delete)
	g.Post("/owners/:id/disable", h.disableOwner)

	a := app.Group("/internal/admin/links", identity.Require(keys))
	a.Get("/", h.adminList)
	a.Get("/counts", h.counts)
	a.Post("/:code/disable", h.disable)
	a.Post("/:code/enable", h.enable)
	a.Delete("/:code", h.purge)
}

func (h handlers) adminList(c *fiber.Ctx) error {
	list, err := h.svc.AdminList(c.UserContext(), identity.CallerOf(c), func(k string) string { return strings.Clone(c.Query(k)) })
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) counts(c *fiber.Ctx) error {
	n, err := h.svc.Counts(c.UserContext(), identity.CallerOf(c))
	if err != nil {
		return err
	}
	return c.JSON(n, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) disable(c *fiber.Ctx) error {
	var req link.DisableRequest
	if err := server.DecodeOptionalJSON(c, &req); err != nil {
		return err
	}
	l, err := h.svc.Disable(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("code")), req)
	if err != nil {
		return err
	}
	return c.JSON(link.LinkResponse{Link: l}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) enable(c *fiber.Ctx) error {
	l, err := h.svc.Enable(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("code")))
	if err != nil {
		return err
	}
	return c.JSON(link.LinkResponse{Link: l}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) purge(c *fiber.Ctx) error {
	if err := h.svc.Purge(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("code"))); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "deleted"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) disableOwner(c *fiber.Ctx) error {
	var req link.DisableRequest
	if err := server.DecodeOptionalJSON(c, &req); err != nil {
		return err
	}
	n, err := h.svc.DisableOwner(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id")), req)
	if err != nil {
		return err
	}
	return c.JSON(link.OwnerDisabled{LinksDisabled: n}, fiber.MIMEApplicationJSONCharsetUTF8)
}

type handlers struct{ svc *links.Service }

func (h handlers) create(c *fiber.Ctx) error {
	var req link.CreateRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	l, window, err := h.svc.CreateReporting(c.UserContext(), identity.CallerOf(c), req)
	if err != nil {
		return err
	}
	out := link.CreateResult{Created: link.Created{
		ShortCode: l.ShortCode, ShortURL: h.svc.ShortURL(l.ShortCode), DestinationURL: l.DestinationURL,
		ExpiresAt: l.ExpiresAt, CreatedAt: l.CreatedAt,
	}}
	if window.Name != "" {
		out.Quota = &window
	}
	return c.Status(fiber.StatusCreated).JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) bulk(c *fiber.Ctx) error {
	var req link.BulkRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	out, err := h.svc.Bulk(c.UserContext(), identity.CallerOf(c), req)
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) analytics(c *fiber.Ctx) error {
	out, err := h.svc.Analytics(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("code")), c.Query("days"))
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) resolve(c *fiber.Ctx) error {
	r, err := h.svc.Resolve(c.UserContext(), c.Params("code"))
	if err != nil {
		return err
	}
	return c.JSON(r, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) info(c *fiber.Ctx) error {
	info, err := h.svc.Info(c.UserContext(), c.Params("code"))
	if err != nil {
		return err
	}
	return c.JSON(info, fiber.MIMEApplicationJSONCharsetUTF8)
}

// mine lists the caller's links.
func (h handlers) mine(c *fiber.Ctx) error {
	list, err := h.svc.Mine(c.UserContext(), identity.CallerOf(c), func(k string) string { return strings.Clone(c.Query(k)) })
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) renew(c *fiber.Ctx) error {
	var req link.RenewRequest
	if err := server.DecodeOptionalJSON(c, &req); err != nil {
		return err
	}
	l, err := h.svc.Renew(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("code")), req)
	if err != nil {
		return err
	}
	return c.JSON(link.LinkResponse{Link: l}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) edit(c *fiber.Ctx) error {
	var req link.EditRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	l, err := h.svc.Edit(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("code")), req)
	if err != nil {
		return err
	}
	return c.JSON(link.LinkResponse{Link: l}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) delete(c *fiber.Ctx) error {
	if err := h.svc.Delete(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("code"))); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "deleted"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) dashboard(c *fiber.Ctx) error {
	d, err := h.svc.Dashboard(c.UserContext(), identity.CallerOf(c))
	if err != nil {
		return err
	}
	return c.JSON(d, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) export(c *fiber.Ctx) error {
	out, err := h.svc.Export(c.UserContext(), identity.CallerOf(c))
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) owned(c *fiber.Ctx) error {
	l, err := h.svc.Owned(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("code")))
	if err != nil {
		return err
	}
	return c.JSON(link.LinkResponse{Link: l}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) autoRenew(c *fiber.Ctx) error {
	var req link.AutoRenewRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	l, err := h.svc.SetAutoRenew(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("code")), req.LinkID, req.AutoRenew)
	if err != nil {
		return err
	}
	return c.JSON(link.LinkResponse{Link: l}, fiber.MIMEApplicationJSONCharsetUTF8)
}
