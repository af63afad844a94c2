package accounts

import (
	"context"
	"errors"
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

func invalidIdentityToken() error { return errs.E(errs.KindUnauthenticated, "invalid identity token") }

func idpNotConfigured() error {
	return errs.E(errs.KindUnauthenticated, "identity provider not configured")
}

// Google logs in with an identity provider ID token. The first login creates the account; a
// verified e-mail of an existing, unlinked account links that account (see link).
//
// Each attempt first takes one unit of the client's failed ID-token login window, and a
// successful one gives it back. Forged tokens are thus limited like password guesses; each
// of them could otherwise make the verifier fetch the provider's keys again (a token with an
// unknown kid does).
func (s *Service) Google(ctx context.Context, caller identity.Caller, req auth.GoogleRequest) (auth.Session, error) {
	if strings.TrimSpace(req.IDToken) == "" {
		return auth.Session{}, errs.Invalid("id_token is required")
	}
	rec := s.newRecord(caller, MethodGoogle, "")
	if !s.idp.Enabled() { // nothing is verified or fetched, so nothing is counted
		return auth.Session{}, s.fail(ctx, rec, ReasonIDPNotConfigured, idpNotConfigured())
	}
	unit, err := s.reserveClient(ctx, caller)
	if err != nil {
		return auth.Session{}, s.fail(ctx, rec, failureReason(err), err)
	}
	sess, reason, err := s.googleLogin(ctx, req.IDToken, &rec)
	if err == nil || reason == ReasonError || reason == ReasonUnavailable {
		// A success, or our own failure rather than the caller's: give the unit back.
		s.release(ctx, unit)
	}
	if err != nil {
		return auth.Session{}, s.fail(ctx, rec, reason, err)
	}
	return sess, nil
}

// googleLogin verifies the token, finds, links or creates the account and issues the
// session. It returns the failure reason with the error.
func (s *Service) googleLogin(ctx context.Context, raw string, rec *LoginRecord) (auth.Session, string, error) {
	id, err := s.idp.Verify(ctx, raw)
	switch {
	case errors.Is(err, idp.ErrNotConfigured):
		return auth.Session{}, ReasonIDPNotConfigured, idpNotConfigured()
	case errors.Is(err, idp.ErrUnavailable):
		return auth.Session{}, ReasonUnavailable, errs.Unavailable("identity provider unavailable", err)
	case err != nil:
		return auth.Session{}, ReasonInvalidToken,
			&errs.Error{Kind: errs.KindUnauthenticated, Message: "invalid identity token", Err: err}
	}
	email := NormalizeEmail(id.Email)
	rec.Email = truncate(email, MaxEmailLength)
	if _, verr := ValidateEmail(email); verr != nil || id.Subject == "" {
		return auth.Session{}, ReasonInvalidToken, invalidIdentityToken()
	}
	if !id.EmailVerified {
		return auth.Session{}, ReasonEmailNotVerified, invalidIdentityToken()
	}
	u, linked, err := s.googleUser(ctx, id, email)
	if err != nil {
		if errors.Is(err, errIdentityConflict) {
			return auth.Session{}, ReasonIdentityConflict, err
		}
		return auth.Session{}, ReasonError, err
	}
	rec.UserID = u.ID
	if linked {
		rec.Reason = ReasonLinked
	}
	if reason, err := u.loginBlocked(s.now()); err != nil {
		return auth.Session{}, reason, err
	}
	sess, err := s.succeed(ctx, u, *rec)
	if err != nil {
		return auth.Session{}, ReasonError, err
	}
	return sess, "", nil
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
