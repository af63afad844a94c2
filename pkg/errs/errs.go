// Package errs defines linkmesh's error kinds and the single place where they become HTTP
// statuses and the {"error": "..."} envelope.
package errs

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/linkmesh/linkmesh/pkg/ratelimit"
)

// Kind classifies a failure independently of transport. Domain code picks a kind; only this
// package decides which HTTP status a kind becomes.
type Kind int

// The kinds of failure the API distinguishes.
const (
	KindInternal Kind = iota
	KindInvalid
	KindUnauthenticated
	KindForbidden
	KindNotFound
	KindMethodNotAllowed
	KindConflict
	KindGone
	KindTooLarge
	KindUnsupportedMedia
	KindTooMany
	KindUnavailable
	KindNotImplemented
	// KindUnprocessable is a well-formed request the state refuses to take: an
	// Idempotency-Key reused with another request.
	KindUnprocessable
)

var kindStatus = map[Kind]int{
	KindInternal:         http.StatusInternalServerError,
	KindInvalid:          http.StatusBadRequest,
	KindUnauthenticated:  http.StatusUnauthorized,
	KindForbidden:        http.StatusForbidden,
	KindNotFound:         http.StatusNotFound,
	KindMethodNotAllowed: http.StatusMethodNotAllowed,
	KindConflict:         http.StatusConflict,
	KindGone:             http.StatusGone,
	KindTooLarge:         http.StatusRequestEntityTooLarge,
	KindUnsupportedMedia: http.StatusUnsupportedMediaType,
	KindTooMany:          http.StatusTooManyRequests,
	KindUnavailable:      http.StatusServiceUnavailable,
	KindNotImplemented:   http.StatusNotImplemented,
	KindUnprocessable:    http.StatusUnprocessableEntity,
}

// Status returns the HTTP status of a kind.
func (k Kind) Status() int { return kindStatus[k] }

// KindFromStatus is the inverse of Status, used when decoding another service's envelope.
func KindFromStatus(status int) Kind {
	for k, s := range kindStatus {
		if s == status {
			return k
		}
	}
	if status >= 400 && status < 500 {
		return KindInvalid
	}
	return KindInternal
}

// Error is a failure whose Message is safe to show to API callers.
type Error struct {
	Kind    Kind
	Message string
	// RetryAfter, when positive, becomes the Retry-After header of a 429 or 503.
	RetryAfter time.Duration
	// RateLimits are the quota windows the refusal (or any answer) reports, written as
	// RateLimit-Policy and RateLimit fields.
	RateLimits []ratelimit.Window
	// Err is the cause, logged but never shown.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an *Error of the given kind with a caller-visible message.
func E(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Invalid is shorthand for a 400 with the given message.
func Invalid(format string, args ...any) *Error { return E(KindInvalid, format, args...) }

// NotFound is shorthand for a 404 with the given message.
func NotFound(format string, args ...any) *Error { return E(KindNotFound, format, args...) }

// Forbidden is shorthand for a 403 with the given message.
func Forbidden(format string, args ...any) *Error { return E(KindForbidden, format, args...) }

// Unavailable wraps a dependency failure as a 503 whose cause is logged, not shown.
func Unavailable(msg string, cause error) *Error {
	return &Error{Kind: KindUnavailable, Message: msg, Err: cause}
}

// TooMany is a 429 carrying how long the caller should wait (at least a second).
func TooMany(msg string, retryAfter time.Duration) *Error {
	return &Error{Kind: KindTooMany, Message: msg, RetryAfter: max(retryAfter, time.Second)}
}

// As returns the *Error inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// IsKind reports whether err carries the given kind.
func IsKind(err error, kind Kind) bool {
	e, ok := As(err)
	return ok && e.Kind == kind
}

// IsClientError reports whether err is the caller's doing (a 4xx): what a caller asked
// wrongly, not what failed on our side.
func IsClientError(err error) bool {
	e, ok := As(err)
	return ok && e.Kind.Status() >= 400 && e.Kind.Status() < 500
}
