package identity

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

const localsCaller = "linkmesh.caller"

// Messages of the 401 a service answers to a call without a valid internal token. Callers
// recognise them: such a refusal is a deployment fault (clock skew, secret mismatch), never
// the end user's, so it must not reach the public as a 401.
const (
	MsgTokenRequired = "internal token required"
	MsgTokenInvalid  = "internal token invalid"
)

// IsTokenRejection reports whether a peer's 401 message is a refusal of our internal token.
func IsTokenRejection(msg string) bool { return msg == MsgTokenRequired || msg == MsgTokenInvalid }

// Require rejects requests without a valid internal token with 401 and stores the caller for
// CallerOf. The raw token is also put into the request context so calls the handler makes to
// other services carry it on.
func Require(keys *Keys) fiber.Handler {
	return func(c *fiber.Ctx) error {
		h := c.Get(fiber.HeaderAuthorization)
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok || tok == "" {
			return errs.E(errs.KindUnauthenticated, MsgTokenRequired)
		}
		caller, err := keys.Verify(tok)
		if err != nil {
			return &errs.Error{Kind: errs.KindUnauthenticated, Message: MsgTokenInvalid, Err: err}
		}
		c.Locals(localsCaller, caller)
		c.SetUserContext(ContextWithToken(c.UserContext(), strings.Clone(tok)))
		return c.Next()
	}
}

// CallerOf returns the caller stored by Require.
func CallerOf(c *fiber.Ctx) Caller {
	caller, _ := c.Locals(localsCaller).(Caller)
	return caller
}
