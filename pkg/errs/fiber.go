package errs

import (
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/linkmesh/linkmesh/pkg/ratelimit"
)

// MsgBodyTooLarge is the message of a 413; server.BodyLimit is the limit it names.
const MsgBodyTooLarge = "request body exceeds 64 KiB"

// Envelope is the body of every failure response.
type Envelope struct {
	Error string `json:"error"`
}

// Response turns any error into the status, public message and Retry-After seconds (0 when
// none) the client sees. Errors that are not *Error are internal: their text is never shown.
func Response(err error) (status int, message string, retryAfter int) {
	if e, ok := As(err); ok {
		if e.RetryAfter > 0 {
			retryAfter = max(1, int(math.Ceil(e.RetryAfter.Seconds())))
		}
		return e.Kind.Status(), e.Message, retryAfter
	}
	var fe *fiber.Error
	if errors.As(err, &fe) {
		return fe.Code, fiberMessage(fe), 0
	}
	return http.StatusInternalServerError, "internal server error", 0
}

// fiberMessage rewrites Fiber's built-in errors into our message style.
func fiberMessage(fe *fiber.Error) string {
	switch fe.Code {
	case http.StatusNotFound:
		return "route not found"
	case http.StatusMethodNotAllowed:
		return "method not allowed"
	case http.StatusRequestEntityTooLarge:
		return MsgBodyTooLarge
	}
	if fe.Code >= 500 {
		return "internal server error"
	}
	// Fiber's and fasthttp's own texts may echo parser details; say what happened instead.
	if text := http.StatusText(fe.Code); text != "" {
		return strings.ToLower(text)
	}
	return "malformed request"
}

// Classifier recognises a failure of a dependency that a store passed up as a plain error
// (a datastore that cannot be reached, say) and says what the client sees instead of a 500;
// it returns nil for errors it does not know.
type Classifier func(error) *Error

// Outage is the Classifier of one dependency: errors outage recognises become a 503 with msg,
// their cause kept for the log. An error already carrying a deliberate kind is left alone:
// whoever chose that kind knew more about the failure than its cause does.
func Outage(msg string, outage func(error) bool) Classifier {
	return func(err error) *Error {
		if e, ok := As(err); ok && e.Kind != KindInternal {
			return nil
		}
		if !outage(err) {
			return nil
		}
		return Unavailable(msg, err)
	}
}

// Classify gives err to each classifier unless it already carries a deliberate kind, and
// returns the first answer; otherwise err itself.
func Classify(err error, classifiers ...Classifier) error {
	if e, ok := As(err); ok && e.Kind != KindInternal {
		return err
	}
	for _, classify := range classifiers {
		if e := classify(err); e != nil {
			return e
		}
	}
	return err
}

// Handler returns the Fiber error handler that writes the envelope; server errors are logged
// with their cause. Errors no handler classified pass through classifiers first.
func Handler(logger *slog.Logger, classifiers ...Classifier) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		err = Classify(err, classifiers...)
		status, msg, retry := Response(err)
		if status >= 500 {
			logger.ErrorContext(c.UserContext(), "request failed",
				"method", c.Method(), "path", c.Path(), "status", status, "err", err)
		}
		if retry > 0 {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retry))
		}
		if e, ok := As(err); ok {
			ratelimit.Set(c, e.RateLimits...)
		}
		return c.Status(status).JSON(Envelope{Error: msg}, fiber.MIMEApplicationJSONCharsetUTF8)
	}
}
