package http

import (
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/server"
)

// route is one protected endpoint: its method, path, minimum role and handler (nil while the
// feature is still to be built: the gate applies, then 501).
type route struct {
	method, path, role string
	handle             fiber.Handler
}

// protectedRoutes is the whole user and admin surface of the specification with the roles
// its endpoint tables require.
func (h *handlers) protectedRoutes() []route {
	const user, mod, super = auth.RoleUser, auth.RoleModerator, auth.RoleSuperAdmin
	return []route{
		{"GET", "/user/dashboard", user, h.dashboard},
		{"GET", "/user/links", user, h.myLinks},
		{"GET", "/user/links/:code/analytics", user, h.linkAnalytics},
		{"POST", "/user/links/:code/renew", user, h.renewLink},
		{"POST", "/user/links/:code/request-permanent", user, h.requestPermanent},
		{"DELETE", "/user/links/:code", user, h.deleteLink},

		{"GET", "/admin/overview", mod, h.overview},
		{"GET", "/admin/users", mod, h.users},
		{"POST", "/admin/users/:id/timeout", mod, h.timeout},
		{"POST", "/admin/users/:id/ban", mod, h.ban},
		{"POST", "/admin/users/:id/unban", mod, h.unban},
		{"POST", "/admin/users/:id/role", super, h.setRole},
		{"GET", "/admin/links", mod, h.adminLinks},
		{"POST", "/admin/links/:code/disable", mod, h.disableLink},
		{"POST", "/admin/links/:code/enable", mod, h.enableLink},
		{"DELETE", "/admin/links/:code", mod, h.purgeLink},
		{"GET", "/admin/reports", mod, h.reports},
		{"POST", "/admin/reports/:id/resolve", mod, h.resolveReport},
		{"GET", "/admin/permanent-requests", mod, h.permanentRequests},
		{"POST", "/admin/permanent-requests/:id/resolve", mod, h.resolvePermanent},
		{"GET", "/admin/login-records", super, h.loginRecords},
		{"GET", "/admin/audit-log", super, h.auditLog},
	}
}

// registerProtected mounts every protected route behind its session and role gate.
func (h *handlers) registerProtected(api fiber.Router) {
	for _, r := range h.protectedRoutes() {
		handle := r.handle
		if handle == nil {
			handle = notBuilt
		}
		api.Add(r.method, r.path, h.Gate.Require(r.role, false), handle)
		if r.method == fiber.MethodGet {
			api.Add(fiber.MethodHead, r.path, h.Gate.Require(r.role, false), handle)
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
