package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/server"
)

// The admin surface: every handler passes the request on to the service that owns the data,
// which applies the rules (roles, ranks, audit) itself.

// reportBody is the public body of POST /api/reports.
type reportBody struct {
	ShortCode    *string `json:"short_code"`
	Reason       *string `json:"reason"`
	Details      *string `json:"details"`
	CaptchaToken *string `json:"captcha_token"`
}

// report files an abuse report. The gateway does the edge's part: the captcha, for every
// reporter, signed in or not; the moderation service does the rest.
func (h *handlers) report(c *fiber.Ctx) error {
	var body reportBody
	if err := server.DecodeJSON(c, &body); err != nil {
		return err
	}
	ctx := c.UserContext()
	if err := h.Captcha.Verify(ctx, body.CaptchaToken); err != nil {
		return err
	}
	report := moderation.ReportBody{ShortCode: body.ShortCode, Reason: body.Reason, Details: body.Details}
	if err := h.Moderation.SubmitReport(ctx, report); err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"status": "report_submitted"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) overview(c *fiber.Ctx) error {
	o, err := h.Moderation.Overview(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(o, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) users(c *fiber.Ctx) error {
	list, err := h.Auth.Users(c.UserContext(), passQuery(c, auth.UserListParams()...))
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) timeout(c *fiber.Ctx) error {
	var req auth.TimeoutRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	u, err := h.Auth.Timeout(c.UserContext(), c.Params("id"), req)
	if err != nil {
		return err
	}
	return c.JSON(auth.UserResponse{User: u}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) ban(c *fiber.Ctx) error {
	var req auth.BanRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	out, err := h.Auth.Ban(c.UserContext(), c.Params("id"), req)
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) unban(c *fiber.Ctx) error {
	u, err := h.Auth.Unban(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(auth.UserResponse{User: u}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) adminLinks(c *fiber.Ctx) error {
	list, err := h.Links.AdminList(c.UserContext(), passQuery(c, link.AdminListParams()...))
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) disableLink(c *fiber.Ctx) error {
	var req link.DisableRequest
	if err := server.DecodeOptionalJSON(c, &req); err != nil {
		return err
	}
	l, err := h.Links.Disable(c.UserContext(), c.Params("code"), req)
	if err != nil {
		return err
	}
	return c.JSON(link.LinkResponse{Link: l}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) enableLink(c *fiber.Ctx) error {
	l, err := h.Links.Enable(c.UserContext(), c.Params("code"))
	if err != nil {
		return err
	}
	return c.JSON(link.LinkResponse{Link: l}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) purgeLink(c *fiber.Ctx) error {
	if err := h.Links.Purge(c.UserContext(), c.Params("code")); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "deleted"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) reports(c *fiber.Ctx) error {
	list, err := h.Moderation.Reports(c.UserContext(), passQuery(c, moderation.ListParams()...))
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) resolveReport(c *fiber.Ctx) error {
	var req moderation.ReportResolveRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	r, err := h.Moderation.ResolveReport(c.UserContext(), c.Params("id"), req)
	if err != nil {
		return err
	}
	return c.JSON(moderation.ReportResponse{Report: r}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) auditLog(c *fiber.Ctx) error {
	list, err := h.Moderation.AuditLog(c.UserContext(), passQuery(c, moderation.AuditParams()...))
	if err != nil {
		return err
	}
	return c.JSON(list, fiber.MIMEApplicationJSONCharsetUTF8)
}
