package links

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// An Idempotency-Key makes a creation safe to retry after an answer that did not arrive (a
// timeout, a 503): the link created under a key has an ID derived from the caller and the
// key, so a retry finds it, and the unique _id decides between concurrent attempts. The key
// is remembered as long as its link exists.

// idempotentID is the ID of the link created by caller under key: a signed-in caller's keys
// are theirs, an anonymous caller's belong to their identity key.
func idempotentID(caller identity.Caller, key string) string {
	scope := "user:" + caller.UserID
	if caller.IsAnonymous() {
		scope = "anonymous:" + caller.IPHash
	}
	sum := sha256.Sum256([]byte(scope + "\x00" + key))
	return hex.EncodeToString(sum[:12])
}

// fingerprint identifies a creation request by what it asks for.
func fingerprint(req link.CreateRequest) string {
	req.IdempotencyKey = ""
	b, _ := json.Marshal(req) // a struct of strings and ints always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// replay answers a request whose key already created a link: the same link for the same
// request, 422 for another. found is false when the key created nothing yet.
func (s *Service) replay(ctx context.Context, id, request string) (l Link, found bool, err error) {
	l, err = s.store.FindByID(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return Link{}, false, nil
	case err != nil:
		return Link{}, false, err
	case l.Request != request:
		return Link{}, true, errs.E(errs.KindUnprocessable, "Idempotency-Key was already used with a different request")
	case l.Purge != nil:
		return Link{}, true, errs.NotFound("the link created with this Idempotency-Key no longer exists")
	}
	return l, true, nil
}
