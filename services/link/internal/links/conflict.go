package links

import (
	"errors"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// ErrConflict is returned by stores when a link changed between the read of a change and
// its write, more often than a change retries.
var ErrConflict = errors.New("the link was changed at the same time; try again")

// storeError turns the store's own refusal into an answer: a write that kept losing its
// revision is a 409; anything else stays as it is.
func storeError(err error) error {
	if errors.Is(err, ErrConflict) {
		return errs.E(errs.KindConflict, "%s", ErrConflict.Error())
	}
	return err
}
