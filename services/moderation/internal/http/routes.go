// Package http exposes the moderation service's internal API to the gateway.
package http

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/moderation/internal/requests"
)

// Register mounts the internal routes on app, all behind the internal token. The link
// service may act as itself on the two routes that finish a permanent deletion, and on no
// other.
func Register(app *fiber.App, keys *identity.Keys, svc *requests.Service) {
	h := handlers{svc: svc}
	caller, callerOrLink := identity.Require(keys), identity.Require(keys, config.Link)
	g := app.Group("/internal/moderation")
	g.Post("/links/:code/permanent-requests", caller, h.file)
	g.Get("/permanent-requests", caller, h.list)
	g.Post("/permanent-requests/:id/resolve", caller, h.resolve)
	g.Post("/reports", caller, h.submit)
	g.Get("/reports", caller, h.reports)
	g.Post("/reports/:id/resolve", caller, h.resolveReport)
	g.Delete("/links/:id/reports", callerOrLink, h.deleteReports)
	g.Post("/audit", callerOrLink, h.record)
	g.Get("/audit", caller, h.auditLog)
	g.Get("/overview", caller, h.overview)
	g.Delete("/users/me", caller, func(c *fiber.Ctx) error {
		if err := svc.Forget(c.UserContext(), identity.CallerOf(c)); err != nil {
			return err
		}
		return c.JSON(fiber.Map{"status": "forgotten"}, fiber.MIMEApplicationJSONCharsetUTF8)
	})
}

func query(c *fiber.Ctx) func(string) string {
	return func(k string) string { return strings.Clone(c.Query(k)) }
}

func (h handlers) submit(c *fiber.Ctx) error {
	var body moderation.ReportBody
	if err := server.DecodeJSON(c, &body); err != nil {
		return err
	}
	if err := h.svc.Submit(c.UserContext(), identity.CallerOf(c), body); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"status": "report_submitted"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) reports(c *fiber.Ctx) error {
	list, err := h.svc.Reports(c.UserContext(), identity.CallerOf(c), query(c))
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) resolveReport(c *fiber.Ctx) error {
	var req moderation.ReportResolveRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	r, err := h.svc.ResolveReport(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id")), req)
	if err != nil {
		return err
	}
	return c.JSON(moderation.ReportResponse{Report: r}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) deleteReports(c *fiber.Ctx) error {
	if err := h.svc.DeleteReports(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id"))); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (h handlers) record(c *fiber.Ctx) error {
	var rec moderation.AuditRecord
	if err := server.DecodeJSON(c, &rec); err != nil {
		return err
	}
	if err := h.svc.Record(c.UserContext(), identity.CallerOf(c), rec); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (h handlers) auditLog(c *fiber.Ctx) error {
	list, err := h.svc.AuditLog(c.UserContext(), identity.CallerOf(c), query(c))
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) overview(c *fiber.Ctx) error {
	o, err := h.svc.Overview(c.UserContext(), identity.CallerOf(c))
	if err != nil {
		return err
	}
	return c.JSON(o, fiber.MIMEApplicationJSONCharsetUTF8)
}

type handlers struct{ svc *requests.Service }

func (h handlers) file(c *fiber.Ctx) error {
	var body moderation.PermanentRequestBody
	if err := server.DecodeOptionalJSON(c, &body); err != nil {
		return err
	}
	r, err := h.svc.File(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("code")), body)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(moderation.RequestResponse{Request: r}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) list(c *fiber.Ctx) error {
	list, err := h.svc.List(c.UserContext(), identity.CallerOf(c), query(c))
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h handlers) resolve(c *fiber.Ctx) error {
	var req moderation.ResolveRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	r, err := h.svc.Resolve(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id")), req)
	if err != nil {
		return err
	}
	return c.JSON(moderation.RequestResponse{Request: r}, fiber.MIMEApplicationJSONCharsetUTF8)
}
