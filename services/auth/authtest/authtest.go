// Package authtest is the auth service's one test seam for end-to-end tests: it restricts a
// stored account (ban, timeout, quota limit) directly, without a moderator or an audit
// entry, with the service's own store code. Tests outside this module use it instead of
// writing the auth database themselves, so a change of its internals cannot silently break
// or falsify them. It is never linked into the service.
package authtest

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/linkmesh/linkmesh/services/auth/internal/accounts"
	"github.com/linkmesh/linkmesh/services/auth/internal/config"
	"github.com/linkmesh/linkmesh/services/auth/internal/store"
)

// Restriction names the fields to set: Status "banned" for a ban; a suspension is a
// TimeoutUntil in the future; QuotaLimit the account's creations per window. It is the
// store's own type.
type Restriction = accounts.Restriction

// Restrict applies r to the account userID in db (the auth service's own database). The
// session gate asks auth on every request, so it acts on the account's next request.
func Restrict(ctx context.Context, db *mongo.Database, userID string, r Restriction) error {
	// Restrict writes no login record; the retention is the setting's default, as the
	// service's own start has brought the database's schema up to date already.
	st, err := store.New(ctx, db, config.DefaultLoginRecordRetention)
	if err != nil {
		return err
	}
	ok, err := st.Restrict(ctx, userID, r, time.Now())
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("restrict %s: no such account", userID)
	}
	return nil
}
