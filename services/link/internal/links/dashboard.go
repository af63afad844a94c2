package links

import (
	"context"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// recentLinks is how many of the newest links the dashboard shows.
const recentLinks = 5

// Dashboard is caller's summary: live links by state, their clicks, the account's quota as
// of now and the newest links.
func (s *Service) Dashboard(ctx context.Context, caller identity.Caller) (link.Dashboard, error) {
	if caller.IsAnonymous() {
		return link.Dashboard{}, errs.E(errs.KindUnauthenticated, "authentication required")
	}
	now := s.now().UTC()
	o, err := s.store.Overview(ctx, ListQuery{OwnerID: caller.UserID, Now: now}, recentLinks)
	if err != nil {
		return link.Dashboard{}, err
	}
	d := link.Dashboard{TotalLinks: o.Total, ExpiredLinks: o.Expired, DisabledLinks: o.Disabled,
		ActiveLinks: max(0, o.Total-o.Expired-o.Disabled)}
	recent := o.Newest
	d.RecentLinks = make([]link.Link, 0, len(recent))
	for _, l := range recent {
		v := s.view(l)
		v.OwnerID = ""
		d.RecentLinks = append(d.RecentLinks, v)
	}
	if d.TotalClicks, err = s.countClicks(ctx, caller.UserID, d.RecentLinks); err != nil {
		return link.Dashboard{}, err
	}
	if d.Quota, err = s.accountQuota(ctx, caller); err != nil {
		return link.Dashboard{}, err
	}
	return d, nil
}

// accountQuota reads the account's creation window without taking a unit.
func (s *Service) accountQuota(ctx context.Context, caller identity.Caller) (link.DashboardQuota, error) {
	u, err := s.quota.Usage(ctx, quota.ReserveRequest{Scope: quota.ScopeUserCreate, Key: caller.UserID, Limit: &caller.QuotaLimit})
	if err != nil {
		if e, ok := errs.As(err); ok && e.Kind == errs.KindUnavailable {
			return link.DashboardQuota{}, err
		}
		return link.DashboardQuota{}, errs.Unavailable("quota service unavailable", err)
	}
	out := link.DashboardQuota{Limit: u.Limit, Used: u.Used, Remaining: u.Remaining, WindowDays: u.WindowSeconds / 86400}
	if u.Used > 0 && !u.ResetsAt.IsZero() {
		at := u.ResetsAt.UTC().Truncate(time.Second)
		out.ResetsAt = &at
	}
	return out, nil
}
