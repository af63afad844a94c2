// Package http exposes the auth service's internal API to the gateway, with the request and
// response types of pkg/clients/auth.
package http

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// Accounts is what the handlers need from the account rules (*accounts.Service).
type Accounts interface {
	Register(ctx context.Context, caller identity.Caller, req auth.RegisterRequest) (auth.Session, error)
	Login(ctx context.Context, caller identity.Caller, req auth.LoginRequest) (auth.Session, error)
	Google(ctx context.Context, caller identity.Caller, req auth.GoogleRequest) (auth.Session, error)
	Logout(ctx context.Context, token string) error
	Validate(ctx context.Context, token string) (auth.Validated, error)
	Sessions(ctx context.Context, caller identity.Caller) (auth.SessionList, error)
	RevokeSession(ctx context.Context, caller identity.Caller, id string) error
	ChangePassword(ctx context.Context, caller identity.Caller, req auth.PasswordChangeRequest) (auth.Session, error)
	RequestPasswordReset(ctx context.Context, caller identity.Caller, req auth.PasswordResetRequest) error
	VerifyEmail(ctx context.Context, req auth.VerifyEmailRequest) (auth.User, error)
	Export(ctx context.Context, caller identity.Caller) (auth.AccountExport, error)
	DeleteAccount(ctx context.Context, caller identity.Caller, req auth.DeleteAccountRequest) error
	ResendVerification(ctx context.Context, caller identity.Caller) error
	ConfirmPasswordReset(ctx context.Context, req auth.PasswordResetConfirm) error
	IDPConfig() auth.IDPConfig
	SetRole(ctx context.Context, caller identity.Caller, targetID, role string) (auth.User, error)
	LoginRecords(ctx context.Context, caller identity.Caller, q accounts.RecordQuery) (auth.LoginRecords, error)
	Users(ctx context.Context, caller identity.Caller, q accounts.UserQuery) (auth.UserList, error)
	UserCounts(ctx context.Context, caller identity.Caller) (auth.UserCounts, error)
	Timeout(ctx context.Context, caller identity.Caller, targetID string, req auth.TimeoutRequest) (auth.User, error)
	Ban(ctx context.Context, caller identity.Caller, targetID string, req auth.BanRequest) (auth.BanResponse, error)
	Unban(ctx context.Context, caller identity.Caller, targetID string) (auth.User, error)
	CreateToken(ctx context.Context, caller identity.Caller, req auth.TokenCreateRequest) (auth.TokenCreated, error)
	Tokens(ctx context.Context, caller identity.Caller) (auth.TokenList, error)
	RevokeToken(ctx context.Context, caller identity.Caller, id string) error
	ValidateToken(ctx context.Context, secret string) (auth.TokenAuth, error)
}

// Register mounts the internal routes on app, all behind the internal token.
func Register(app *fiber.App, keys *identity.Keys, svc Accounts) {
	h := handlers{svc: svc}
	g := app.Group("/internal/auth", identity.Require(keys))
	g.Post("/register", h.register)
	g.Post("/login", h.login)
	g.Post("/google", h.google)
	g.Post("/logout", h.logout)
	g.Post("/sessions/validate", h.validate)
	g.Get("/sessions", h.sessions)
	g.Get("/export", h.export)
	g.Delete("/account", h.deleteAccount)
	g.Post("/password", h.changePassword)
	g.Post("/password-reset", h.requestReset)
	g.Post("/verify-email", h.verifyEmail)
	g.Post("/resend-verification", h.resendVerification)
	g.Post("/password-reset/confirm", h.confirmReset)
	g.Delete("/sessions/:id", h.revokeSession)
	g.Get("/idp-config", h.idpConfig)
	g.Post("/users/:id/role", h.setRole)
	g.Get("/login-records", h.loginRecords)
	g.Get("/users", h.users)
	g.Get("/users/counts", h.userCounts)
	g.Post("/users/:id/timeout", h.timeout)
	g.Post("/users/:id/ban", h.ban)
	g.Post("/users/:id/unban", h.unban)
	g.Post("/tokens/validate", h.validateToken)
	g.Post("/tokens", h.createToken)
	g.Get("/tokens", h.tokens)
	g.Delete("/tokens/:id", h.revokeToken)
}

type handlers struct{ svc Accounts }

func reply(c *fiber.Ctx, status int, v any) error {
	return c.Status(status).JSON(v, fiber.MIMEApplicationJSONCharsetUTF8)
}

// parseRegister decodes and validates a register body; the fuzz test drives it directly.
func parseRegister(c *fiber.Ctx) (auth.RegisterRequest, error) {
	var req auth.RegisterRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return req, err
	}
	_, err := accounts.ValidateRegistration(req)
	return req, err
}

// parseLogin decodes and validates a login body.
func parseLogin(c *fiber.Ctx) (auth.LoginRequest, error) {
	var req auth.LoginRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return req, err
	}
	_, err := accounts.ValidateLogin(req)
	return req, err
}

func (h handlers) register(c *fiber.Ctx) error {
	req, err := parseRegister(c)
	if err != nil {
		return err
	}
	s, err := h.svc.Register(c.UserContext(), identity.CallerOf(c), req)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusCreated, s)
}

func (h handlers) login(c *fiber.Ctx) error {
	req, err := parseLogin(c)
	if err != nil {
		return err
	}
	s, err := h.svc.Login(c.UserContext(), identity.CallerOf(c), req)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, s)
}

func (h handlers) google(c *fiber.Ctx) error {
	var req auth.GoogleRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	s, err := h.svc.Google(c.UserContext(), identity.CallerOf(c), req)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, s)
}

func (h handlers) logout(c *fiber.Ctx) error {
	var req auth.TokenRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	if err := h.svc.Logout(c.UserContext(), req.Token); err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, fiber.Map{"status": "logged_out"})
}

func (h handlers) validate(c *fiber.Ctx) error {
	var req auth.TokenRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	v, err := h.svc.Validate(c.UserContext(), req.Token)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, v)
}

func (h handlers) changePassword(c *fiber.Ctx) error {
	var req auth.PasswordChangeRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	s, err := h.svc.ChangePassword(c.UserContext(), identity.CallerOf(c), req)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, s)
}

func (h handlers) verifyEmail(c *fiber.Ctx) error {
	var req auth.VerifyEmailRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	u, err := h.svc.VerifyEmail(c.UserContext(), req)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, auth.UserResponse{User: u})
}

func (h handlers) resendVerification(c *fiber.Ctx) error {
	if err := h.svc.ResendVerification(c.UserContext(), identity.CallerOf(c)); err != nil {
		return err
	}
	return reply(c, fiber.StatusAccepted, fiber.Map{"status": "sent"})
}

func (h handlers) requestReset(c *fiber.Ctx) error {
	var req auth.PasswordResetRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	if err := h.svc.RequestPasswordReset(c.UserContext(), identity.CallerOf(c), req); err != nil {
		return err
	}
	return reply(c, fiber.StatusAccepted, fiber.Map{"status": "sent"})
}

func (h handlers) confirmReset(c *fiber.Ctx) error {
	var req auth.PasswordResetConfirm
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	if err := h.svc.ConfirmPasswordReset(c.UserContext(), req); err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, fiber.Map{"status": "changed"})
}

func (h handlers) deleteAccount(c *fiber.Ctx) error {
	var req auth.DeleteAccountRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	if err := h.svc.DeleteAccount(c.UserContext(), identity.CallerOf(c), req); err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, fiber.Map{"status": "deleted"})
}

func (h handlers) export(c *fiber.Ctx) error {
	out, err := h.svc.Export(c.UserContext(), identity.CallerOf(c))
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, out)
}

func (h handlers) sessions(c *fiber.Ctx) error {
	out, err := h.svc.Sessions(c.UserContext(), identity.CallerOf(c))
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, out)
}

func (h handlers) revokeSession(c *fiber.Ctx) error {
	if err := h.svc.RevokeSession(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id"))); err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, fiber.Map{"status": "revoked"})
}

func (h handlers) idpConfig(c *fiber.Ctx) error {
	return reply(c, fiber.StatusOK, h.svc.IDPConfig())
}

func (h handlers) setRole(c *fiber.Ctx) error {
	var req auth.RoleRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	// Params point into Fiber's request buffer, which is reused after the handler; the id
	// goes into stored records and log lines, so it gets its own copy.
	u, err := h.svc.SetRole(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id")), req.Role)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, auth.UserResponse{User: u})
}

func (h handlers) loginRecords(c *fiber.Ctx) error {
	// Query values alias Fiber's request buffer too.
	q, err := accounts.ParseRecordQuery(func(k string) string { return strings.Clone(c.Query(k)) })
	if err != nil {
		return err
	}
	recs, err := h.svc.LoginRecords(c.UserContext(), identity.CallerOf(c), q)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, recs)
}

func (h handlers) users(c *fiber.Ctx) error {
	q, err := accounts.ParseUserQuery(func(k string) string { return strings.Clone(c.Query(k)) })
	if err != nil {
		return err
	}
	list, err := h.svc.Users(c.UserContext(), identity.CallerOf(c), q)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, list)
}

func (h handlers) userCounts(c *fiber.Ctx) error {
	n, err := h.svc.UserCounts(c.UserContext(), identity.CallerOf(c))
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, n)
}

func (h handlers) timeout(c *fiber.Ctx) error {
	var req auth.TimeoutRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	u, err := h.svc.Timeout(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id")), req)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, auth.UserResponse{User: u})
}

func (h handlers) ban(c *fiber.Ctx) error {
	var req auth.BanRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	res, err := h.svc.Ban(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id")), req)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, res)
}

func (h handlers) unban(c *fiber.Ctx) error {
	// No field is read, but a body that is there must still be JSON.
	var req struct{}
	if err := server.DecodeOptionalJSON(c, &req); err != nil {
		return err
	}
	u, err := h.svc.Unban(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, auth.UserResponse{User: u})
}

func (h handlers) createToken(c *fiber.Ctx) error {
	var req auth.TokenCreateRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	out, err := h.svc.CreateToken(c.UserContext(), identity.CallerOf(c), req)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusCreated, out)
}

func (h handlers) tokens(c *fiber.Ctx) error {
	out, err := h.svc.Tokens(c.UserContext(), identity.CallerOf(c))
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, out)
}

func (h handlers) revokeToken(c *fiber.Ctx) error {
	if err := h.svc.RevokeToken(c.UserContext(), identity.CallerOf(c), strings.Clone(c.Params("id"))); err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, fiber.Map{"status": "revoked"})
}

func (h handlers) validateToken(c *fiber.Ctx) error {
	var req auth.TokenRequest
	if err := server.DecodeJSON(c, &req); err != nil {
		return err
	}
	out, err := h.svc.ValidateToken(c.UserContext(), req.Token)
	if err != nil {
		return err
	}
	return reply(c, fiber.StatusOK, out)
}
