package requests

import (
	"context"
	"errors"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/paging"
)

// File records caller's request for their link code. The link service decides whose link it
// is (another owner's is a 404); a link that already auto-renews, or has a pending request,
// is a 409, and the unique pending index keeps one under any number of concurrent attempts.
func (s *Service) File(ctx context.Context, caller identity.Caller, code string, body moderation.PermanentRequestBody) (moderation.PermanentRequest, error) {
	if caller.IsAnonymous() {
		return moderation.PermanentRequest{}, errs.E(errs.KindUnauthenticated, "authentication required")
	}
	var reason string
	if body.Reason != nil {
		reason = *body.Reason
	}
	if err := errs.Text("reason", reason, MaxTextLength); err != nil {
		return moderation.PermanentRequest{}, err
	}
	l, err := s.links.Owned(ctx, code)
	if err != nil {
		return moderation.PermanentRequest{}, err
	}
	if l.AutoRenew {
		return moderation.PermanentRequest{}, errs.E(errs.KindConflict, "link already auto-renews")
	}
	r := Request{ID: s.newID(), LinkID: l.ID, ShortCode: l.ShortCode, OwnerID: caller.UserID, Reason: reason, Status: StatusPending,
		CreatedAt: s.now().UTC().Truncate(time.Millisecond)}
	if err := s.store.InsertRequest(ctx, r); err != nil {
		if errors.Is(err, ErrPending) {
			return moderation.PermanentRequest{}, errs.E(errs.KindConflict, "%s", ErrPending.Error())
		}
		return moderation.PermanentRequest{}, err
	}
	return view(r), nil
}

// List is a page of requests for a moderator: status pending (default), approved, rejected
// or all, newest first.
func (s *Service) List(ctx context.Context, caller identity.Caller, get func(string) string) (moderation.RequestList, error) {
	if !caller.AtLeastModerator() {
		return moderation.RequestList{}, errs.Forbidden("moderator role required")
	}
	page, err := paging.Parse(get)
	if err != nil {
		return moderation.RequestList{}, err
	}
	status, err := statusFilter(get("status"), StatusApproved, StatusRejected)
	if err != nil {
		return moderation.RequestList{}, err
	}
	found, total, err := s.store.Requests(ctx, status, page.Skip(), page.Limit())
	if err != nil {
		return moderation.RequestList{}, err
	}
	out := moderation.RequestList{Requests: make([]moderation.PermanentRequest, 0, len(found)), Page: page.Page,
		PageSize: page.PageSize, Total: total}
	for _, r := range found {
		out.Requests = append(out.Requests, view(r))
	}
	return out, nil
}

// Forget is the moderation part of deleting the caller's account: their audit entries keep
// no User-Agent, their permanent requests go. Again, it does nothing.
func (s *Service) Forget(ctx context.Context, caller identity.Caller) error {
	if caller.IsAnonymous() {
		return errs.E(errs.KindUnauthenticated, "authentication required")
	}
	return s.store.Forget(ctx, caller.UserID)
}
