// Package http is the gateway's public API: it routes /api/* to the services, answers the
// redirect route, and is the only place the outside world reaches.
package http

import (
	"github.com/linkmesh/linkmesh/pkg/clients/analytics"

	"context"
	"log/slog"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/services/gateway/internal/redirect"
	"github.com/linkmesh/linkmesh/services/gateway/internal/session"
	"github.com/linkmesh/linkmesh/services/gateway/internal/webapp"
)

// Probe checks that a dependency can serve.
type Probe func(ctx context.Context) error

// Links is what the routes ask of the link service; *link.Client satisfies it.
type Links interface {
	Create(ctx context.Context, req link.CreateRequest) (link.CreateResult, error)
	Info(ctx context.Context, code string) (link.Info, error)
	Mine(ctx context.Context, query url.Values) (link.List, error)
	Renew(ctx context.Context, code string, req link.RenewRequest) (link.Link, error)
	Delete(ctx context.Context, code string) error
	Edit(ctx context.Context, code string, req link.EditRequest) (link.Link, error)
	Bulk(ctx context.Context, req link.BulkRequest) (link.BulkResponse, error)
	CreateWebhook(ctx context.Context, req link.WebhookCreateRequest) (link.WebhookCreated, error)
	Webhooks(ctx context.Context) (link.WebhookList, error)
	DeleteWebhook(ctx context.Context, id string) error
	TestWebhook(ctx context.Context, id string) error
	Deliveries(ctx context.Context, id string, query url.Values) (link.DeliveryList, error)
	Dashboard(ctx context.Context) (link.Dashboard, error)
	Analytics(ctx context.Context, code string, query url.Values) (analytics.LinkAnalytics, error)
	AdminList(ctx context.Context, query url.Values) (link.List, error)
	Disable(ctx context.Context, code string, req link.DisableRequest) (link.Link, error)
	Enable(ctx context.Context, code string) (link.Link, error)
	Purge(ctx context.Context, code string) error
}

// Auth is what the routes ask of the auth service; *auth.Client satisfies it.
type Auth interface {
	Register(ctx context.Context, req auth.RegisterRequest) (auth.Session, error)
	Login(ctx context.Context, req auth.LoginRequest) (auth.Session, error)
	Google(ctx context.Context, req auth.GoogleRequest) (auth.Session, error)
	Logout(ctx context.Context, token string) error
	IDPConfig(ctx context.Context) (auth.IDPConfig, error)
	SetRole(ctx context.Context, userID, role string) (auth.User, error)
	LoginRecords(ctx context.Context, query url.Values) (auth.LoginRecords, error)
	Users(ctx context.Context, query url.Values) (auth.UserList, error)
	Timeout(ctx context.Context, id string, req auth.TimeoutRequest) (auth.User, error)
	Ban(ctx context.Context, id string, req auth.BanRequest) (auth.BanResponse, error)
	Unban(ctx context.Context, id string) (auth.User, error)
	CreateToken(ctx context.Context, req auth.TokenCreateRequest) (auth.TokenCreated, error)
	Tokens(ctx context.Context) (auth.TokenList, error)
	RevokeToken(ctx context.Context, id string) error
	Sessions(ctx context.Context) (auth.SessionList, error)
	Export(ctx context.Context) (auth.AccountExport, error)
	DeleteAccount(ctx context.Context, req auth.DeleteAccountRequest) error
	ChangePassword(ctx context.Context, req auth.PasswordChangeRequest) (auth.Session, error)
	RequestPasswordReset(ctx context.Context, req auth.PasswordResetRequest) error
	VerifyEmail(ctx context.Context, req auth.VerifyEmailRequest) (auth.User, error)
	ResendVerification(ctx context.Context) error
	ConfirmPasswordReset(ctx context.Context, req auth.PasswordResetConfirm) error
	RevokeSession(ctx context.Context, id string) error
}

// Moderation is what the routes ask of the moderation service; *moderation.Client
// satisfies it.
type Moderation interface {
	RequestPermanent(ctx context.Context, code string, body moderation.PermanentRequestBody) (moderation.PermanentRequest, error)
	PermanentRequests(ctx context.Context, query url.Values) (moderation.RequestList, error)
	ResolvePermanent(ctx context.Context, id string, req moderation.ResolveRequest) (moderation.PermanentRequest, error)
	SubmitReport(ctx context.Context, body moderation.ReportBody) error
	Reports(ctx context.Context, query url.Values) (moderation.ReportList, error)
	ResolveReport(ctx context.Context, id string, req moderation.ReportResolveRequest) (moderation.Report, error)
	Overview(ctx context.Context) (moderation.Overview, error)
	AuditLog(ctx context.Context, query url.Values) (moderation.AuditLog, error)
}

// Captcha verifies a captcha token; *captcha.Verifier satisfies it.
type Captcha interface {
	// Enabled reports whether a verifier is configured; without one Verify accepts all.
	Enabled() bool
	Verify(ctx context.Context, token *string) error
}

// noCaptcha accepts every request: no verifier is configured.
type noCaptcha struct{}

func (noCaptcha) Enabled() bool                         { return false }
func (noCaptcha) Verify(context.Context, *string) error { return nil }

// Deps are the collaborators of the routes.
type Deps struct {
	Links      Links
	Auth       Auth
	Moderation Moderation
	Gate       *session.Gate
	Captcha    Captcha
	// BaseURL is our own origin: the only one that may send browser writes that carry a
	// session or start one.
	BaseURL  string
	Redirect *redirect.Handler
	// Web is the web application and the pages browsers get for refused visits.
	Web *webapp.App
	// Health lists the services /api/health needs, by name.
	Health map[string]Probe
	Logger *slog.Logger
}

// Register mounts every public route on app.
func Register(app *fiber.App, d Deps) {
	if d.Captcha == nil {
		d.Captcha = noCaptcha{}
	}
	h := &handlers{Deps: d}
	api := app.Group("/api", session.SameSite(d.BaseURL))
	api.Get("/health", h.health)
	api.Get("/openapi.yaml", serveOpenAPI)
	api.Get("/links/:code/info", h.info)
	api.Get("/links/:code/qr", h.qrCode)
	h.registerAuth(api)
	h.registerGated(api)

	// Fiber answers HEAD through the GET routes.
	d.Web.Register(app)
	app.Get("/:code", func(c *fiber.Ctx) error {
		if err := d.Redirect.Serve(c); err != nil {
			return d.Web.Refused(c, c.Params("code"), err)
		}
		return nil
	})
}

type handlers struct{ Deps }

// anonymous returns the request context carrying an anonymous caller's internal token.
func (h *handlers) anonymous(c *fiber.Ctx) (context.Context, error) {
	return h.Gate.As(c, identity.Anonymous)
}

func (h *handlers) info(c *fiber.Ctx) error {
	if !link.PlausibleCode(c.Params("code")) {
		return errs.NotFound(link.MsgNotFound)
	}
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

// health asks every service it depends on at once, within one bounded wait.
func (h *handlers) health(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	names := make([]string, 0, len(h.Health))
	for name := range h.Health {
		names = append(names, name)
	}
	sort.Strings(names)
	failures := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { failures[i] = h.Health[name](ctx) })
	}
	wg.Wait()
	for i, err := range failures {
		if err != nil {
			return errs.Unavailable(names[i]+" service unavailable", err)
		}
	}
	return c.JSON(fiber.Map{"status": "ok"}, fiber.MIMEApplicationJSONCharsetUTF8)
}
