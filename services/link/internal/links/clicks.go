package links

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// Clicks answers for the links' clicks; *analytics.Client satisfies it. The analytics
// service owns every click: a link view asks it rather than keep a copy that a second writer
// would have to update.
type Clicks interface {
	Counts(ctx context.Context, req analytics.CountsRequest) (analytics.Counts, error)
	Link(ctx context.Context, linkID, code string, days int) (analytics.LinkAnalytics, error)
	// Purge deletes every click and rollup of a link; again, it does nothing.
	Purge(ctx context.Context, linkID string) error
}

// countClicks fills in the click_count of views, all ownerID's, and returns the clicks of
// every link ownerID has.
func (s *Service) countClicks(ctx context.Context, ownerID string, views []link.Link) (int64, error) {
	ids := make([]string, 0, len(views))
	for _, v := range views {
		ids = append(ids, v.ID)
	}
	c, err := s.clicks.Counts(ctx, analytics.CountsRequest{OwnerID: ownerID, LinkIDs: ids})
	if err != nil {
		return 0, err
	}
	for i := range views {
		views[i].ClickCount = c.Links[views[i].ID]
	}
	return c.Owner, nil
}

// Analytics answers for caller's link code over the last days days (query parameter
// days, 1–365, default 30); another's link or a deleted one is a 404. Soft-deleted links
// keep their clicks, but their owner no longer sees the link.
func (s *Service) Analytics(ctx context.Context, caller identity.Caller, code, days string) (analytics.LinkAnalytics, error) {
	n, err := analytics.ParseDays(days)
	if err != nil {
		return analytics.LinkAnalytics{}, err
	}
	l, err := s.owned(ctx, caller, code)
	if err != nil {
		return analytics.LinkAnalytics{}, err
	}
	out, err := s.clicks.Link(ctx, l.ID, l.ShortCode, n)
	if err != nil {
		return analytics.LinkAnalytics{}, err
	}
	return out, nil
}
