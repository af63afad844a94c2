package http

import (
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/gateway/internal/session"
)

// route is one gated endpoint: its method, path, minimum role ("" admits anonymous callers
// too), the API token scope that opens it ("" refuses tokens) and handler (nil while the
// feature is still to be built: the gate applies, then 501).
type route struct {
	method, path, role, scope string
	handle                    fiber.Handler
}

// gatedRoutes is every route that authenticates its caller, with the roles the
// specification's endpoint tables require and the scopes of the contract's token table: the
// one table the gate, the OpenAPI document and the authorization tests read.
func (h *handlers) gatedRoutes() []route {
	const anyone, user, mod, super = "", auth.RoleUser, auth.RoleModerator, auth.RoleSuperAdmin
	const read, write, stats, hooks, none = auth.ScopeLinksRead, auth.ScopeLinksWrite, auth.ScopeAnalyticsRead, auth.ScopeWebhooksWrite, ""
	return []route{
		{"POST", "/links/shorten", anyone, write, h.shorten},
		{"POST", "/links/bulk", user, write, h.bulk},
		{"POST", "/reports", anyone, none, h.report},

		{"GET", "/user/dashboard", user, read, h.dashboard},
		{"GET", "/user/links", user, read, h.myLinks},
		{"GET", "/user/links/:code/analytics", user, stats, h.linkAnalytics},
		{"GET", "/user/links/:code/analytics/export", user, stats, h.exportAnalytics},
		{"POST", "/user/links/:code/renew", user, write, h.renewLink},
		{"POST", "/user/links/:code/request-permanent", user, write, h.requestPermanent},
		{"PATCH", "/user/links/:code", user, write, h.editLink},
		{"DELETE", "/user/links/:code", user, write, h.deleteLink},

		{"POST", "/user/webhooks", user, hooks, h.createWebhook},
		{"GET", "/user/webhooks", user, hooks, h.webhooks},
		{"DELETE", "/user/webhooks/:id", user, hooks, h.deleteWebhook},
		{"POST", "/user/webhooks/:id/test", user, hooks, h.testWebhook},
		{"GET", "/user/webhooks/:id/deliveries", user, hooks, h.deliveries},

		{"GET", "/user/sessions", user, none, h.sessions},
		{"GET", "/user/export", user, none, h.exportAccount},
		{"DELETE", "/user/account", user, none, h.deleteAccount},
		{"DELETE", "/user/sessions/:id", user, none, h.revokeSession},

		{"POST", "/user/tokens", user, none, h.createToken},
		{"GET", "/user/tokens", user, none, h.tokens},
		{"DELETE", "/user/tokens/:id", user, none, h.revokeToken},

		{"GET", "/admin/overview", mod, none, h.overview},
		{"GET", "/admin/users", mod, none, h.users},
		{"POST", "/admin/users/:id/timeout", mod, none, h.timeout},
		{"POST", "/admin/users/:id/ban", mod, none, h.ban},
		{"POST", "/admin/users/:id/unban", mod, none, h.unban},
		{"POST", "/admin/users/:id/role", super, none, h.setRole},
		{"GET", "/admin/links", mod, none, h.adminLinks},
		{"POST", "/admin/links/:code/disable", mod, none, h.disableLink},
		{"POST", "/admin/links/:code/enable", mod, none, h.enableLink},
		{"DELETE", "/admin/links/:code", mod, none, h.purgeLink},
		{"GET", "/admin/reports", mod, none, h.reports},
		{"POST", "/admin/reports/:id/resolve", mod, none, h.resolveReport},
		{"GET", "/admin/permanent-requests", mod, none, h.permanentRequests},
		{"POST", "/admin/permanent-requests/:id/resolve", mod, none, h.resolvePermanent},
		{"GET", "/admin/login-records", super, none, h.loginRecords},
		{"GET", "/admin/audit-log", super, none, h.auditLog},
	}
}

// registerGated mounts every gated route behind its gate.
func (h *handlers) registerGated(api fiber.Router) {
	for _, r := range h.gatedRoutes() {
		handle := r.handle
		if handle == nil {
			handle = notBuilt
		}
		gate := h.Gate.Admit(session.Rule{MinRole: r.role, Scope: r.scope})
		api.Add(r.method, r.path, gate, handle)
		if r.method == fiber.MethodGet {
			api.Add(fiber.MethodHead, r.path, gate, handle)
		}
	}
}

func notBuilt(*fiber.Ctx) error {
	return errs.E(errs.KindNotImplemented, "not implemented yet")
}

func (h *handlers) setRole(c *fiber.Ctx) error {
	var req auth.RoleRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	u, err := h.Auth.SetRole(c.UserContext(), c.Params("id"), req.Role)
	if err != nil {
		return err
	}
	return c.JSON(auth.UserResponse{User: u}, fiber.MIMEApplicationJSONCharsetUTF8)
}

// loginRecords passes the public filters and paging to the auth service, which validates them.
func (h *handlers) loginRecords(c *fiber.Ctx) error {
	recs, err := h.Auth.LoginRecords(c.UserContext(), passQuery(c, "user_id", "email", "success", "page", "page_size"))
	if err != nil {
		return err
	}
	return c.JSON(recs, fiber.MIMEApplicationJSONCharsetUTF8)
}

// myLinks passes the list's parameters to the link service, which validates them.
func (h *handlers) myLinks(c *fiber.Ctx) error {
	list, err := h.Links.Mine(c.UserContext(), passQuery(c, link.ListParams()...))
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}

// linkAnalytics passes days to the link service, which checks ownership and days.
func (h *handlers) linkAnalytics(c *fiber.Ctx) error {
	out, err := h.Links.Analytics(c.UserContext(), c.Params("code"), passQuery(c, "days"))
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) dashboard(c *fiber.Ctx) error {
	d, err := h.Links.Dashboard(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(d, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) renewLink(c *fiber.Ctx) error {
	var req link.RenewRequest
	if err := server.DecodeOptionalJSON(c, &req); err != nil {
		return err
	}
	l, err := h.Links.Renew(c.UserContext(), c.Params("code"), req)
	if err != nil {
		return err
	}
	return c.JSON(link.LinkResponse{Link: l}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) editLink(c *fiber.Ctx) error {
	var req link.EditRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	l, err := h.Links.Edit(c.UserContext(), c.Params("code"), req)
	if err != nil {
		return err
	}
	return c.JSON(link.LinkResponse{Link: l}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) deleteLink(c *fiber.Ctx) error {
	if err := h.Links.Delete(c.UserContext(), c.Params("code")); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "deleted"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) requestPermanent(c *fiber.Ctx) error {
	var body moderation.PermanentRequestBody
	if err := server.DecodeOptionalJSON(c, &body); err != nil {
		return err
	}
	r, err := h.Moderation.RequestPermanent(c.UserContext(), c.Params("code"), body)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(moderation.RequestResponse{Request: r}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) permanentRequests(c *fiber.Ctx) error {
	list, err := h.Moderation.PermanentRequests(c.UserContext(), passQuery(c, moderation.ListParams()...))
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) resolvePermanent(c *fiber.Ctx) error {
	var req moderation.ResolveRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	r, err := h.Moderation.ResolvePermanent(c.UserContext(), c.Params("id"), req)
	if err != nil {
		return err
	}
	return c.JSON(moderation.RequestResponse{Request: r}, fiber.MIMEApplicationJSONCharsetUTF8)
}

// passQuery copies the named query parameters a route forwards; others are dropped.
func passQuery(c *fiber.Ctx, keys ...string) url.Values {
	q := url.Values{}
	for _, k := range keys {
		if v := c.Query(k); v != "" {
			q.Set(k, v)
		}
	}
	return q
}
