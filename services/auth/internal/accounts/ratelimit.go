package accounts

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// unknownClientKey is the per-client quota key of callers whose token carries no identity
// key. They share one window: failing closed for them is safer than not counting them.
const unknownClientKey = "unknown-client"

// loginUnits are the two units one login attempt holds.
type loginUnits struct {
	email, client quota.ReleaseRequest
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

// reserveLogin takes one unit of the e-mail's and one of the client's failure window. If
// either is refused the other is given back and the answer is 429 with Retry-After. Any
// failure of the quota service fails the login (closed), as a 503.
func (s *Service) reserveLogin(ctx context.Context, email string, caller identity.Caller) (loginUnits, error) {
	var units loginUnits
	var err error
	if units.email, err = quota.Take(ctx, s.quota, quota.ReserveRequest{Scope: quota.ScopeLoginEmail, Key: emailKey(email)}, msgTooManyLogins); err != nil {
		return units, err
	}
	units.client, err = s.reserveClient(ctx, caller)
	if err != nil {
		s.release(ctx, units.email)
		return loginUnits{}, err
	}
	return units, nil
}

// reserveClient takes one unit of the client's failure window. Password and identity
// provider logins share it, so a client guessing at either is stopped for both.
func (s *Service) reserveClient(ctx context.Context, caller identity.Caller) (quota.ReleaseRequest, error) {
	key := ipHash(caller)
	if key == "" {
		key = unknownClientKey
	}
	return quota.Take(ctx, s.quota, quota.ReserveRequest{Scope: quota.ScopeLoginIP, Key: key}, msgTooManyLogins)
}

// msgTooManyLogins answers a login refused by either failure window.
const msgTooManyLogins = "too many failed login attempts"

// releaseLogin gives both units back.
func (s *Service) releaseLogin(ctx context.Context, units loginUnits) {
	s.release(ctx, units.email)
	s.release(ctx, units.client)
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
