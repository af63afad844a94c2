package http

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/gateway/internal/session"
)

// registerAuth mounts /api/auth/*: the auth service does the work, the gateway owns the cookie.
func (h *handlers) registerAuth(api fiber.Router) {
	g := api.Group("/auth", session.RefuseTokens)
	g.Post("/register", h.register)
	g.Post("/login", h.login)
	g.Post("/google", h.google)
	g.Post("/logout", h.logout)
	g.Get("/me", h.Gate.Require(auth.RoleUser, true), h.me)
	g.Post("/password", h.Gate.Require(auth.RoleUser, false), h.changePassword)
	g.Post("/password-reset", h.requestReset)
	g.Post("/verify-email", h.verifyEmail)
	g.Post("/resend-verification", h.Gate.Require(auth.RoleUser, false), h.resendVerification)
	g.Post("/password-reset/confirm", h.confirmReset)
	g.Get("/idp-config", h.idpConfig)
}

func (h *handlers) register(c *fiber.Ctx) error {
	var req auth.RegisterRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx, err := h.anonymous(c)
	if err != nil {
		return err
	}
	// Registrations pass the captcha like anonymous creations (when a verifier is set).
	if err := h.Captcha.Verify(ctx, req.CaptchaToken); err != nil {
		return err
	}
	req.CaptchaToken = nil
	req.IdempotencyKey = c.Get("Idempotency-Key")
	s, err := h.Auth.Register(ctx, req)
	if err != nil {
		return err
	}
	return h.startSession(c, fiber.StatusCreated, s)
}

func (h *handlers) login(c *fiber.Ctx) error {
	var req auth.LoginRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx, err := h.anonymous(c)
	if err != nil {
		return err
	}
	if req.Captcha, err = h.loginCaptcha(ctx, req.CaptchaToken); err != nil {
		return err
	}
	req.CaptchaToken = nil
	s, err := h.Auth.Login(ctx, req)
	if err != nil {
		return err
	}
	return h.startSession(c, fiber.StatusOK, s)
}

// loginCaptcha verifies a login's captcha token, when a verifier is configured and the
// client sent one, and says what it found for the auth service, which asks for it only
// once the e-mail has reached its failure ceiling. A token sent and refused is the
// captcha's 400 (or 503) at once.
func (h *handlers) loginCaptcha(ctx context.Context, token *string) (string, error) {
	switch {
	case !h.Captcha.Enabled():
		return auth.CaptchaOff, nil
	case token == nil:
		return auth.CaptchaMissing, nil
	}
	if err := h.Captcha.Verify(ctx, token); err != nil {
		return "", err
	}
	return auth.CaptchaPassed, nil
}

func (h *handlers) google(c *fiber.Ctx) error {
	var req auth.GoogleRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx, err := h.anonymous(c)
	if err != nil {
		return err
	}
	s, err := h.Auth.Google(ctx, req)
	if err != nil {
		return err
	}
	return h.startSession(c, fiber.StatusOK, s)
}

// startSession sets the cookie of a fresh session and answers {"user": ...}.
func (h *handlers) startSession(c *fiber.Ctx, status int, s auth.Session) error {
	h.Gate.SetCookie(c, s.Token, s.ExpiresAt)
	return c.Status(status).JSON(auth.UserResponse{User: s.User}, fiber.MIMEApplicationJSONCharsetUTF8)
}

// changePassword changes the caller's password; the auth service ends every session of
// theirs, and the caller goes on with the fresh one it answers, in a new cookie.
func (h *handlers) changePassword(c *fiber.Ctx) error {
	var req auth.PasswordChangeRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	s, err := h.Auth.ChangePassword(c.UserContext(), req)
	if err != nil {
		return err
	}
	h.Gate.SetCookie(c, s.Token, s.ExpiresAt)
	return c.JSON(fiber.Map{"status": "changed"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

// verifyEmail verifies the address a mailed token was sent to.
func (h *handlers) verifyEmail(c *fiber.Ctx) error {
	var req auth.VerifyEmailRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx, err := h.anonymous(c)
	if err != nil {
		return err
	}
	u, err := h.Auth.VerifyEmail(ctx, req)
	if err != nil {
		return err
	}
	return c.JSON(auth.UserResponse{User: u}, fiber.MIMEApplicationJSONCharsetUTF8)
}

// resendVerification mails the signed-in caller's verification link again.
func (h *handlers) resendVerification(c *fiber.Ctx) error {
	if err := h.Auth.ResendVerification(c.UserContext()); err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"status": "sent"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

// requestReset mails a reset link if an account has the address; the answer is the same
// either way.
func (h *handlers) requestReset(c *fiber.Ctx) error {
	var req auth.PasswordResetRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx, err := h.anonymous(c)
	if err != nil {
		return err
	}
	if err := h.Auth.RequestPasswordReset(ctx, req); err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"status": "sent"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

// confirmReset sets a new password with a mailed token; every session of the account ends,
// and a cookie the caller had goes with them.
func (h *handlers) confirmReset(c *fiber.Ctx) error {
	var req auth.PasswordResetConfirm
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	ctx, err := h.anonymous(c)
	if err != nil {
		return err
	}
	if err := h.Auth.ConfirmPasswordReset(ctx, req); err != nil {
		return err
	}
	h.Gate.ClearCookie(c)
	return c.JSON(fiber.Map{"status": "changed"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

// logout revokes the session server-side, so the old cookie is dead even if a client keeps
// it, and clears the cookie. It is idempotent: without a session it just clears.
func (h *handlers) logout(c *fiber.Ctx) error {
	if token := c.Cookies(session.CookieName); session.PlausibleToken(token) {
		ctx, err := h.anonymous(c)
		if err != nil {
			return err
		}
		if err := h.Auth.Logout(ctx, strings.Clone(token)); err != nil {
			return err
		}
	}
	h.Gate.ClearCookie(c)
	return c.JSON(fiber.Map{"status": "logged_out"}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) me(c *fiber.Ctx) error {
	u, _ := session.UserOf(c)
	return c.JSON(auth.UserResponse{User: u}, fiber.MIMEApplicationJSONCharsetUTF8)
}

func (h *handlers) idpConfig(c *fiber.Ctx) error {
	ctx, err := h.anonymous(c)
	if err != nil {
		return err
	}
	cfg, err := h.Auth.IDPConfig(ctx)
	if err != nil {
		return err
	}
	return c.JSON(cfg, fiber.MIMEApplicationJSONCharsetUTF8)
}
