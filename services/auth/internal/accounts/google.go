package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/services/auth/internal/idp"
)

// errIdentityConflict: the e-mail's account is already linked to another subject.
var errIdentityConflict = errs.E(errs.KindConflict, "email is linked to another identity provider account")

// googleAttempts bounds the find-or-create loop when concurrent first logins race.
const googleAttempts = 3

func invalidIdentityToken() error { return errs.E(errs.KindUnauthenticated, "invalid identity token") }

// Google logs in with an identity provider ID token. The first login creates the account; a
// verified e-mail of an existing account links that account to the token's subject.
func (s *Service) Google(ctx context.Context, caller identity.Caller, req auth.GoogleRequest) (auth.Session, error) {
	if strings.TrimSpace(req.IDToken) == "" {
		return auth.Session{}, errs.Invalid("id_token is required")
	}
	rec := s.newRecord(caller, MethodGoogle, "")
	id, err := s.idp.Verify(ctx, req.IDToken)
	switch {
	case errors.Is(err, idp.ErrNotConfigured):
		return auth.Session{}, s.fail(ctx, rec, ReasonIDPNotConfigured,
			errs.E(errs.KindUnauthenticated, "identity provider not configured"))
	case errors.Is(err, idp.ErrUnavailable):
		return auth.Session{}, s.fail(ctx, rec, ReasonUnavailable, errs.Unavailable("identity provider unavailable", err))
	case err != nil:
		return auth.Session{}, s.fail(ctx, rec, ReasonInvalidToken,
			&errs.Error{Kind: errs.KindUnauthenticated, Message: "invalid identity token", Err: err})
	}
	email := NormalizeEmail(id.Email)
	rec.Email = truncate(email, MaxEmailLength)
	if _, verr := ValidateEmail(email); verr != nil || id.Subject == "" {
		return auth.Session{}, s.fail(ctx, rec, ReasonInvalidToken, invalidIdentityToken())
	}
	if !id.EmailVerified {
		return auth.Session{}, s.fail(ctx, rec, ReasonEmailNotVerified, invalidIdentityToken())
	}
	u, err := s.googleUser(ctx, id, email)
	if err != nil {
		reason := ReasonError
		if errors.Is(err, errIdentityConflict) {
			reason = ReasonIdentityConflict
		}
		return auth.Session{}, s.fail(ctx, rec, reason, err)
	}
	rec.UserID = u.ID
	if reason, err := u.loginBlocked(s.now()); err != nil {
		return auth.Session{}, s.fail(ctx, rec, reason, err)
	}
	sess, err := s.succeed(ctx, u, rec)
	if err != nil {
		return auth.Session{}, s.fail(ctx, rec, ReasonError, err)
	}
	return sess, nil
}

// googleUser finds the account of id by subject, then by e-mail (linking it), or creates it.
// The unique e-mail index decides concurrent first logins; the loser looks again.
func (s *Service) googleUser(ctx context.Context, id idp.Identity, email string) (User, error) {
	for range googleAttempts {
		u, err := s.store.UserByIDPUID(ctx, id.Subject)
		if err == nil || !errors.Is(err, ErrUserNotFound) {
			return u, err
		}
		u, err = s.store.UserByEmail(ctx, email)
		if err == nil {
			return s.link(ctx, u, id.Subject)
		}
		if !errors.Is(err, ErrUserNotFound) {
			return User{}, err
		}
		u = newGoogleUser(id, email, s.now().UTC())
		err = s.store.InsertUser(ctx, u)
		if err == nil {
			return u, nil
		}
		if !errors.Is(err, ErrEmailTaken) {
			return User{}, err
		}
	}
	return User{}, fmt.Errorf("find or create google account: still racing after %d attempts", googleAttempts)
}

// link sets the subject on an account found by its verified e-mail. An account linked to
// another subject stays as it is.
func (s *Service) link(ctx context.Context, u User, sub string) (User, error) {
	if u.IDPUID == sub {
		return u, nil
	}
	if u.IDPUID != "" {
		return User{}, errIdentityConflict
	}
	now := s.now().UTC()
	linked, err := s.store.LinkIDP(ctx, u.ID, sub, now)
	if err != nil {
		return User{}, err
	}
	if !linked { // someone linked it meanwhile; only the same subject may use it
		if u, err = s.store.UserByID(ctx, u.ID); err != nil {
			return User{}, err
		}
		if u.IDPUID != sub {
			return User{}, errIdentityConflict
		}
		return u, nil
	}
	u.IDPUID, u.UpdatedAt = sub, now
	return u, nil
}

// newGoogleUser builds the account of a first identity provider login: names from
// given_name/family_name, else from name, else from the e-mail's local part; no password.
func newGoogleUser(id idp.Identity, email string, now time.Time) User {
	first, last := googleNames(id, email)
	return User{ID: newID(), Email: email, FirstName: first, LastName: last,
		AuthProvider: auth.ProviderGoogle, IDPUID: id.Subject, Role: auth.RoleUser, Status: auth.StatusActive,
		QuotaLimit: DefaultQuotaLimit, CreatedAt: now, UpdatedAt: now}
}

func googleNames(id idp.Identity, email string) (string, string) {
	clean := func(s string) string {
		s = strings.Join(strings.FieldsFunc(s, unicode.IsControl), " ")
		return truncate(strings.TrimSpace(s), MaxNameLength)
	}
	first, last := clean(id.GivenName), clean(id.FamilyName)
	if first == "" || last == "" {
		nameFirst, nameRest, _ := strings.Cut(clean(id.Name), " ")
		if first == "" {
			first = clean(nameFirst)
		}
		if last == "" {
			last = clean(nameRest)
		}
	}
	local, _, _ := strings.Cut(email, "@")
	if first == "" {
		first = truncate(local, MaxNameLength)
	}
	if last == "" {
		last = truncate(local, MaxNameLength)
	}
	return first, last
}
