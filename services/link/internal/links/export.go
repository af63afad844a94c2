package links

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// exportPage is how many links one store read of an export takes; exportAnalytics how many
// links' analytics are asked at once.
const (
	exportPage      = 500
	exportAnalytics = 8
)

// Export is every live link of the caller in the owner's view (click counts included), each
// with its analytics over the longest range the service keeps (analytics.MaxDays): the
// links part of the caller's data export. The auth service asks it on the caller's behalf.
func (s *Service) Export(ctx context.Context, caller identity.Caller) (link.Export, error) {
	if caller.IsAnonymous() {
		return link.Export{}, errs.E(errs.KindUnauthenticated, "authentication required")
	}
	out := link.Export{Links: []link.ExportedLink{}}
	q := ListQuery{OwnerID: caller.UserID, Now: s.now().UTC(), Limit: exportPage}
	for {
		found, total, err := s.store.List(ctx, q)
		if err != nil {
			return link.Export{}, err
		}
		views := make([]link.Link, len(found))
		for i, l := range found {
			views[i] = s.view(l)
			views[i].OwnerID = ""
		}
		if _, err := s.countClicks(ctx, caller.UserID, views); err != nil {
			return link.Export{}, err
		}
		page := make([]link.ExportedLink, len(views))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(exportAnalytics)
		for i := range views {
			g.Go(func() error {
				a, err := s.clicks.Link(gctx, views[i].ID, views[i].ShortCode, analytics.MaxDays)
				page[i] = link.ExportedLink{Link: views[i], Analytics: a}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return link.Export{}, err
		}
		out.Links = append(out.Links, page...)
		q.Skip += int64(len(found))
		if len(found) == 0 || q.Skip >= total {
			return out, nil
		}
	}
}
