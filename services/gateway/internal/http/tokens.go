package http

import (
	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/server"
)

func (h *handlers) createToken(c *fiber.Ctx) error {
	var req auth.TokenCreateRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	out, err := h.Auth.CreateToken(c.UserContext(), req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) tokens(c *fiber.Ctx) error {
	out, err := h.Auth.Tokens(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) revokeToken(c *fiber.Ctx) error {
	if err := h.Auth.RevokeToken(c.UserContext(), c.Params("id")); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "revoked"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) sessions(c *fiber.Ctx) error {
	out, err := h.Auth.Sessions(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) revokeSession(c *fiber.Ctx) error {
	if err := h.Auth.RevokeSession(c.UserContext(), c.Params("id")); err != nil {
		return err
	}
	return c.JSON(fiber.Map{"status": "revoked"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

// exportAccount answers the caller's data export as a JSON file to save.
func (h *handlers) exportAccount(c *fiber.Ctx) error {
	out, err := h.Auth.Export(c.UserContext())
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="linkmesh-export-`+out.ExportedAt.Format("2006-01-02")+`.json"`)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(out, fiber.MIMEApplicationJSONCharsetUTF8)
}

// deleteAccount deletes the caller's account and everything of it; the cookie goes too.
func (h *handlers) deleteAccount(c *fiber.Ctx) error {
	var req auth.DeleteAccountRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	if err := h.Auth.DeleteAccount(c.UserContext(), req); err != nil {
		return err
	}
	h.Gate.ClearCookie(c)
	return c.JSON(fiber.Map{"status": "deleted"}, fiber.MIMEApplicationJSONCharsetUTF8)
}
