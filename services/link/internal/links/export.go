package links

import (
	"context"
	"errors"
	"time"

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

// DeleteAll deletes every link of the caller for good, their account going: each is marked
// for purging (from then on it answers 404 everywhere) in the caller's name, without the
// User-Agent a moderator's purge records (nothing of the person stays in the audit log but
// the keyed hash of their address), and purged with its clicks and reports at once or, should
// that fail, by the sweeper. Calling it again finishes what is left.
func (s *Service) DeleteAll(ctx context.Context, caller identity.Caller) error {
	if caller.IsAnonymous() {
		return errs.E(errs.KindUnauthenticated, "authentication required")
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	q := ListQuery{OwnerID: caller.UserID, IncludeDeleted: true, Now: now, Limit: exportPage}
	for {
		found, _, err := s.store.List(ctx, q)
		if err != nil {
			return err
		}
		if len(found) == 0 {
			return nil
		}
		for _, l := range found {
			if l.Purge == nil {
				m, err := s.store.MarkPurge(ctx, l.ID, PurgeMark{By: caller.UserID, Role: caller.Role, IPHash: caller.IPHash, At: now})
				if errors.Is(err, ErrNotFound) {
					continue // purged meanwhile
				}
				if err != nil {
					return storeError(err)
				}
				l.Purge = &m
			}
			s.cache.Invalidate(ctx, l.ShortCode)
			if err := s.finishPurge(ctx, l); err != nil {
				// Marked: it answers 404 already, and the sweeper finishes it.
				s.log.WarnContext(ctx, "purge a deleted account's link; the sweeper will finish it", "link_id", l.ID, "err", err)
			}
		}
		if len(found) < exportPage {
			return nil
		}
	}
}
