package identity

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

const localsCaller = "linkmesh.caller"

// Messages of the 401 a service answers to a call without a valid internal token. Callers
// recognise them: such a refusal is a deployment fault (clock skew, mismatched keys), never
// the end user's, so it must not reach the public as a 401.
const (
	MsgTokenRequired = "internal token required"
	MsgTokenInvalid  = "internal token invalid"
)

// IsTokenRejection reports whether a peer's 401 message is a refusal of our internal token.
func IsTokenRejection(msg string) bool { return msg == MsgTokenRequired || msg == MsgTokenInvalid }

// Require rejects requests without a valid internal token addressed to this service with 401
// and stores the caller for CallerOf. Calls the handler makes to other services with the
// request's context pass the token on, acting for the same caller. A service acting as itself
// is let in only when named in services; the handlers decide what it may do.
func Require(keys *Keys, services ...string) fiber.Handler {
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
		if caller.Role == RoleService && !slices.Contains(services, caller.Service) {
			return &errs.Error{Kind: errs.KindUnauthenticated, Message: MsgTokenInvalid,
				Err: fmt.Errorf("%s may not call these routes as itself", caller.Service)}
		}
		c.Locals(localsCaller, caller)
		c.SetUserContext(keys.Received(c.UserContext(), strings.Clone(tok)))
		return c.Next()
	}
}

// CallerOf returns the caller stored by Require.
func CallerOf(c *fiber.Ctx) Caller {
	caller, _ := c.Locals(localsCaller).(Caller)
	return caller
}
