package accounts

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// unknownClientKey is the per-client quota key of callers whose token carries no identity
// key. They share one window: failing closed for them is safer than not counting them.
const unknownClientKey = "unknown-client"

// loginUnits are the units one password login attempt holds: one of the window of its pair
// of e-mail and client, one of the client's window over all e-mails, one of the e-mail's
// ceiling over all clients (none when a captcha let it past a full ceiling).
type loginUnits struct {
	pair, client, email quota.ReleaseRequest
}

// ipHash returns the caller's identity key if it has the shape of one (64 hex characters,
// an HMAC-SHA256), so that nothing else, least of all a raw IP, is ever stored as ip_hash.
func ipHash(caller identity.Caller) string {
	h := caller.IPHash
	if len(h) != 64 {
		return ""
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return ""
		}
	}
	return h
}

// reserveLogin takes one unit of each failure window of a password login:
//   - the pair (e-mail, client): a stranger failing from one client fills only their own
//     pair's window, so the owner, from another client, still gets in;
//   - the client over all e-mails: one client spraying passwords over many e-mails;
//   - the e-mail over all clients: an attack on one e-mail spread over many clients. Once
//     it is full, a login that passed a captcha (captcha, as the gateway found it) goes on
//     without it, so nobody can keep the owner out; without a verifier it stays a 429,
//     and with one but no token it is a 400 asking for the captcha.
//
// Each is taken only after the one before was granted; when one is refused the others are
// given back and the answer is 429 with Retry-After. Any failure of the quota service fails
// the login (closed), as a 503.
func (s *Service) reserveLogin(ctx context.Context, email string, caller identity.Caller, captcha string) (loginUnits, error) {
	var units loginUnits
	var err error
	pair := quota.ReserveRequest{Scope: quota.ScopeLoginEmailClient, Key: pairKey(email, clientKey(caller))}
	if units.pair, err = quota.Take(ctx, s.quota, pair, msgTooManyLogins); err != nil {
		return loginUnits{}, err
	}
	client := quota.ReserveRequest{Scope: quota.ScopeLoginClient, Key: clientKey(caller)}
	if units.client, err = quota.Take(ctx, s.quota, client, msgTooManyLogins); err != nil {
		s.releaseLogin(ctx, units)
		return loginUnits{}, err
	}
	ceiling := quota.ReserveRequest{Scope: quota.ScopeLoginEmail, Key: emailKey(email)}
	units.email, err = quota.Take(ctx, s.quota, ceiling, msgTooManyLogins)
	switch {
	case err == nil:
	case !errs.IsKind(err, errs.KindTooMany) || captcha == auth.CaptchaOff:
		s.releaseLogin(ctx, units)
		return loginUnits{}, err
	case captcha == auth.CaptchaMissing:
		s.releaseLogin(ctx, units)
		return loginUnits{}, errs.Invalid("%s", auth.MsgCaptchaRequired)
	}
	return units, nil
}

// reserveClient takes one unit of the client's failed ID-token login window, its own:
// password logins do not count there.
func (s *Service) reserveClient(ctx context.Context, caller identity.Caller) (quota.ReleaseRequest, error) {
	return quota.Take(ctx, s.quota, quota.ReserveRequest{Scope: quota.ScopeLoginIP, Key: clientKey(caller)}, msgTooManyLogins)
}

// clientKey is the caller's identity key, or unknownClientKey.
func clientKey(caller identity.Caller) string {
	if key := ipHash(caller); key != "" {
		return key
	}
	return unknownClientKey
}

// msgTooManyLogins answers a login refused by either failure window.
const msgTooManyLogins = "too many failed login attempts"

// releaseLogin gives every unit held back.
func (s *Service) releaseLogin(ctx context.Context, units loginUnits) {
	s.release(ctx, units.pair)
	s.release(ctx, units.client)
	s.release(ctx, units.email)
}

// release gives one unit back even if the caller has gone: the login happened either way. A
// failure is logged; the unit then simply stays counted until the window passes.
func (s *Service) release(ctx context.Context, r quota.ReleaseRequest) {
	if r.ID == "" {
		return
	}
	if err := s.quota.Release(context.WithoutCancel(ctx), r); err != nil {
		s.log.WarnContext(ctx, "release login unit failed", "scope", r.Scope, "err", err)
	}
}
