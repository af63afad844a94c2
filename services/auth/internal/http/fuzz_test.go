package http

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"golang.org/x/text/unicode/norm"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/server"
	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
)

// checkAccepted asserts what an accepted registration guarantees.
func checkAccepted(t *testing.T, req auth.RegisterRequest) {
	t.Helper()
	reg, err := accounts.ValidateRegistration(req)
	if err != nil {
		t.Fatalf("accepted once, refused again: %v", err)
	}
	n := utf8.RuneCountInString
	if reg.Email != strings.ToLower(strings.TrimSpace(reg.Email)) || n(reg.Email) > 254 || !strings.Contains(reg.Email, "@") ||
		reg.Email != accounts.NormalizeEmail(reg.Email) || !norm.NFC.IsNormalString(reg.Email) ||
		!norm.NFC.IsNormalString(reg.Password) || reg.Email != accounts.NormalizeEmail(req.Email) ||
		n(reg.Password) < 8 || n(reg.Password) > 128 ||
		reg.FirstName == "" || reg.LastName == "" || n(reg.FirstName) > 100 || n(reg.LastName) > 100 ||
		reg.FirstName != strings.TrimSpace(reg.FirstName) || reg.LastName != strings.TrimSpace(reg.LastName) {
		t.Fatalf("accepted registration breaks a rule: %+v", reg)
	}
}

// FuzzDecodeAuthBodies feeds arbitrary bytes through the decoding and validation of the auth
// bodies (register, login, password change and reset, verification, deletion): it must never panic, and every refusal is a 400 with a message.
func FuzzDecodeAuthBodies(f *testing.F) {
	for _, seed := range []string{
		`{"email":"a@example.com","password":"correct-horse","first_name":"A","last_name":"B"}`,
		`{"email":"Name <a@example.com>","password":"x"}`,
		`{"email":"a@example.com","password":"` + "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9" + `","first_name":" ","last_name":"\u0000"}`,
		`{"email":"JOSE\u0301@EXAMPLE.COM","password":"cafe\u0301cafe\u0301","first_name":"A","last_name":"B"}`,
		`{"email":"\u212a@example.com","password":"` + strings.Repeat("e\u0301", 128) + `","first_name":"A","last_name":"B"}`,
		`{"email":5}`, `[]`, `null`, `{"password":null}`, `"\ud800"`, `{"email":"\xff@x"}`, ``,
	} {
		f.Add([]byte(seed))
	}
	app := fiber.New()
	f.Fuzz(func(t *testing.T, body []byte) {
		for name, parse := range map[string]func(*fiber.Ctx) error{
			"register": func(c *fiber.Ctx) error {
				req, err := parseRegister(c)
				if err == nil {
					checkAccepted(t, req)
				}
				return err
			},
			"login": func(c *fiber.Ctx) error { _, err := parseLogin(c); return err },
			// The bodies of the account routes: decoded, then checked as far as no store is asked.
			"password change": func(c *fiber.Ctx) error {
				var req auth.PasswordChangeRequest
				if err := server.DecodeJSON(c, &req); err != nil {
					return err
				}
				return accounts.ValidatePassword(req.NewPassword)
			},
			"password reset": func(c *fiber.Ctx) error {
				var req auth.PasswordResetRequest
				if err := server.DecodeJSON(c, &req); err != nil {
					return err
				}
				_, err := accounts.ValidateEmail(req.Email)
				return err
			},
			"reset confirmation": func(c *fiber.Ctx) error {
				var req auth.PasswordResetConfirm
				if err := server.DecodeJSON(c, &req); err != nil {
					return err
				}
				return accounts.ValidatePassword(req.NewPassword)
			},
			"verification": func(c *fiber.Ctx) error {
				var req auth.VerifyEmailRequest
				return server.DecodeJSON(c, &req)
			},
			"deletion": func(c *fiber.Ctx) error {
				var req auth.DeleteAccountRequest
				return server.DecodeJSON(c, &req)
			},
		} {
			fctx := &fasthttp.RequestCtx{}
			fctx.Request.SetBody(body)
			c := app.AcquireCtx(fctx)
			err := parse(c)
			app.ReleaseCtx(c)
			if err == nil {
				continue
			}
			if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid || e.Message == "" {
				t.Fatalf("%s: refusal of %q is not a 400 with a message: %v", name, body, err)
			}
		}
	})
}
