package links

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
)

// Classes are where the admin overview's counters count a link. A link is in exactly one;
// every change of a stored link records the class it leaves and the class it enters, and
// one writer folds those changes into the counters, so that reading them costs the same
// whatever the number of links.
const (
	// ClassNone is a link the counters do not hold: not stored yet, or being purged.
	ClassNone = ""
	// ClassDeleted is a soft-deleted link.
	ClassDeleted = "deleted"
	// ClassDisabled is a live disabled link.
	ClassDisabled = "disabled"
	// ClassRenewing is a live enabled link that renews itself: never expired.
	ClassRenewing = "renewing"
	// classExpiring prefixes the class of a live enabled link that expires: the minute of
	// its expiry (ExpiryMinute), counted active until that minute has passed.
	classExpiring = "exp:"
)

// ErrConflict is returned by stores when a link changed between the read of a change and
// its write, more often than a change retries.
var ErrConflict = errors.New("the link was changed at the same time; try again")

// ErrCountsNotReady is returned by stores before the counters have counted the stored links
// for the first time.
var ErrCountsNotReady = errors.New("link counts are not ready yet")

// Class is where the counters count l.
func (l Link) Class() string {
	switch {
	case l.Purge != nil:
		return ClassNone
	case l.DeletedAt != nil:
		return ClassDeleted
	case l.Status == link.StatusDisabled:
		return ClassDisabled
	case l.AutoRenew:
		return ClassRenewing
	}
	return classExpiring + strconv.FormatInt(ExpiryMinute(l.ExpiresAt), 10)
}

// ExpiryMinute is the minute (since the epoch) an expiry at t falls in. A link whose expiry
// minute has fully passed is counted expired: at most a minute after it expired.
func ExpiryMinute(t time.Time) int64 { return t.Unix() / 60 }

// ExpiringAt says whether class is that of a link expiring in a minute, and which.
func ExpiringAt(class string) (int64, bool) {
	rest, ok := strings.CutPrefix(class, classExpiring)
	if !ok {
		return 0, false
	}
	m, err := strconv.ParseInt(rest, 10, 64)
	return m, err == nil
}

// storeError turns the store's own refusals into answers: a write that kept losing its
// revision is a 409, counters not counted yet a 503; anything else stays as it is.
func storeError(err error) error {
	switch {
	case errors.Is(err, ErrConflict):
		return errs.E(errs.KindConflict, "%s", ErrConflict.Error())
	case errors.Is(err, ErrCountsNotReady):
		return errs.Unavailable(ErrCountsNotReady.Error(), err)
	}
	return err
}
