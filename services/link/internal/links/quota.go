package links

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/ratelimit"
)

// Quota takes and gives back units of a creation window; *quota.Client satisfies it.
type Quota interface {
	Reserve(ctx context.Context, req quota.ReserveRequest) (quota.Reservation, error)
	Release(ctx context.Context, req quota.ReleaseRequest) error
	Usage(ctx context.Context, req quota.ReserveRequest) (quota.Reservation, error)
}

// unit is a taken quota unit; the zero unit took nothing.
type unit struct{ release *quota.ReleaseRequest }

// CreatePolicy names the creation quota in RateLimit fields.
const CreatePolicy = "create"

// msgUserQuota refuses a creation over a registered caller's quota.
const msgUserQuota = "monthly link quota exceeded"

// reserve takes one creation unit for caller: an anonymous caller's from the window of its
// identity key (the gateway's HMAC of its address, carried in the internal token), a signed-in
// caller's from the window of its account, up to the quota_limit the token carries. It
// reports the caller's creation window after it.
func (s *Service) reserve(ctx context.Context, caller identity.Caller) (unit, ratelimit.Window, error) {
	req, denied := quota.ReserveRequest{Scope: quota.ScopeUserCreate, Key: caller.UserID, Limit: &caller.QuotaLimit},
		msgUserQuota
	if caller.IsAnonymous() {
		if caller.IPHash == "" {
			// Only a caller the gateway did not describe has no key; counting it under one
			// shared empty key would let it exhaust everybody's quota, or nobody's.
			return unit{}, ratelimit.Window{}, errs.E(errs.KindInternal, "anonymous creation without an identity key")
		}
		req, denied = quota.ReserveRequest{Scope: quota.ScopeAnonymousCreate, Key: caller.IPHash}, "anonymous link quota exceeded"
	}
	rel, w, err := quota.TakeReporting(ctx, s.quota, req, denied, CreatePolicy)
	if err != nil {
		return unit{}, ratelimit.Window{}, err
	}
	return unit{release: &rel}, w, nil
}

// release gives u back after a failed creation. The caller may have gone, and the unit
// must be returned regardless.
func (s *Service) release(ctx context.Context, u unit) {
	if u.release == nil {
		return
	}
	if err := s.quota.Release(context.WithoutCancel(ctx), *u.release); err != nil {
		s.log.ErrorContext(ctx, "release quota unit", "err", err)
	}
}

// usage is caller's creation window as it stands, for an answer that took no unit (a
// replay); a zero window when the quota service cannot say (the answer stands without it).
func (s *Service) usage(ctx context.Context, caller identity.Caller) ratelimit.Window {
	req := quota.ReserveRequest{Scope: quota.ScopeUserCreate, Key: caller.UserID, Limit: &caller.QuotaLimit}
	if caller.IsAnonymous() {
		req = quota.ReserveRequest{Scope: quota.ScopeAnonymousCreate, Key: caller.IPHash}
	}
	res, err := s.quota.Usage(ctx, req)
	if err != nil {
		return ratelimit.Window{}
	}
	return res.Window(CreatePolicy, s.now())
}
