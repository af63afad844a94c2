package accounts

import (
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

// StatusAt derives the public status: banned if the stored status says so, suspended while a
// timeout runs, active otherwise. A suspension ends by itself when timeout_until passes,
// without any write.
func (u User) StatusAt(now time.Time) string {
	switch {
	case u.Status == auth.StatusBanned:
		return auth.StatusBanned
	case u.TimeoutUntil != nil && now.Before(*u.TimeoutUntil):
		return auth.StatusSuspended
	default:
		return auth.StatusActive
	}
}

// loginBlocked returns the login record reason and the 403 of a banned or suspended
// account, or a nil error when the account may log in.
func (u User) loginBlocked(now time.Time) (string, error) {
	switch u.StatusAt(now) {
	case auth.StatusBanned:
		return ReasonBanned, errs.Forbidden("account is banned")
	case auth.StatusSuspended:
		return ReasonSuspended, errs.Forbidden("account is suspended until %s", u.TimeoutUntil.UTC().Format(time.RFC3339))
	}
	return "", nil
}
