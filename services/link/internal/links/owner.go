package links

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// MaxQueryLength bounds q of a list: no code or destination is longer.
const MaxQueryLength = 2048

// Mine lists caller's live links for the query parameters get reads (page, page_size,
// status, q); a bad value is a 400 naming the parameter.
func (s *Service) Mine(ctx context.Context, caller identity.Caller, get func(string) string) (link.List, error) {
	if caller.IsAnonymous() {
		return link.List{}, errs.E(errs.KindUnauthenticated, "authentication required")
	}
	q, page, err := parseList(get, s.now().UTC())
	if err != nil {
		return link.List{}, err
	}
	q.OwnerID = caller.UserID
	found, total, err := s.store.List(ctx, q)
	if err != nil {
		return link.List{}, err
	}
	out := link.List{Links: make([]link.Link, 0, len(found)), Page: page.Page, PageSize: page.PageSize, Total: total}
	for _, l := range found {
		v := s.view(l)
		v.OwnerID = "" // the owner's own view
		out.Links = append(out.Links, v)
	}
	if _, err := s.countClicks(ctx, caller.UserID, out.Links); err != nil {
		return link.List{}, err
	}
	return out, nil
}

// Renew sets the expiry of caller's link code to now + days (default 30, 1-365), expired or
// not, keeping the code; a disabled link stays disabled (403).
func (s *Service) Renew(ctx context.Context, caller identity.Caller, code string, req link.RenewRequest) (link.Link, error) {
	days := DefaultExpirationDays
	if d := req.ExpirationDays; d != nil {
		if *d < 1 || *d > MaxRegisteredDays {
			return link.Link{}, errs.Invalid("expiration_days must be between 1 and %d", MaxRegisteredDays)
		}
		days = *d
	}
	l, err := s.owned(ctx, caller, code)
	if err != nil {
		return link.Link{}, err
	}
	if l.Status == link.StatusDisabled {
		return link.Link{}, errs.Forbidden(link.MsgDisabled)
	}
	l.ExpiresAt = s.now().UTC().Truncate(time.Millisecond).AddDate(0, 0, days)
	if err := s.change(ctx, caller, l, Change{ExpiresAt: &l.ExpiresAt, Event: s.event(link.EventRenewed), IfStatus: link.StatusActive}); err != nil {
		return link.Link{}, err
	}
	return s.ownerView(ctx, l)
}

// ownerView is the owner's view of l, with its clicks counted. The change is made by then:
// a failure to count is logged and shows 0 rather than failing the answer.
func (s *Service) ownerView(ctx context.Context, l Link) (link.Link, error) {
	v := []link.Link{s.view(l)}
	v[0].OwnerID = ""
	if _, err := s.countClicks(ctx, l.OwnerID, v); err != nil {
		s.log.WarnContext(ctx, "count the clicks of a changed link", "code", l.ShortCode, "err", err)
	}
	return v[0], nil
}

// Edit changes the destination of caller's live link code, checked as at creation, and
// stamps destination_changed_at; every cache drops the code, so visitors go to the new
// destination on every replica within a second. A disabled link stays as it is (403).
func (s *Service) Edit(ctx context.Context, caller identity.Caller, code string, req link.EditRequest) (link.Link, error) {
	if req.DestinationURL == nil {
		return link.Link{}, errs.Invalid("destination_url is required")
	}
	l, err := s.owned(ctx, caller, code)
	if err != nil {
		return link.Link{}, err
	}
	if l.Status == link.StatusDisabled {
		return link.Link{}, errs.Forbidden(link.MsgDisabled)
	}
	dest := *req.DestinationURL
	if err := s.urls.Check(ctx, dest); err != nil {
		return link.Link{}, errs.Invalid("destination_url%s", strings.TrimPrefix(err.Error(), "url"))
	}
	at := s.now().UTC().Truncate(time.Millisecond)
	if err := s.change(ctx, caller, l, Change{DestinationURL: &dest, DestinationChangedAt: &at, Event: s.event(link.EventUpdated),
		IfStatus: link.StatusActive}); err != nil {
		return link.Link{}, err
	}
	l.DestinationURL, l.DestinationChangedAt = dest, &at
	return s.ownerView(ctx, l)
}

// Delete soft-deletes caller's link code: it answers 404 everywhere from then on, and a
// second delete is a 404 too.
func (s *Service) Delete(ctx context.Context, caller identity.Caller, code string) error {
	l, err := s.owned(ctx, caller, code)
	if err != nil {
		return err
	}
	at := s.now().UTC().Truncate(time.Millisecond)
	return s.change(ctx, caller, l, Change{DeletedAt: &at, Event: s.event(link.EventDeleted)})
}

// Owned is caller's live link code in the owner's view.
func (s *Service) Owned(ctx context.Context, caller identity.Caller, code string) (link.Link, error) {
	l, err := s.owned(ctx, caller, code)
	if err != nil {
		return link.Link{}, err
	}
	v := s.view(l)
	v.OwnerID = ""
	return v, nil
}

// SetAutoRenew switches the auto-renewal of the live link code: a moderator's action (the
// approval of a permanent request). With linkID the change is for that link only: when code
// is gone or names another link now, 409 link.MsgLinkGone. The change reaches every cache
// within a second.
func (s *Service) SetAutoRenew(ctx context.Context, caller identity.Caller, code, linkID string, on bool) (link.Link, error) {
	if !caller.AtLeastModerator() {
		return link.Link{}, errs.Forbidden("moderator role required")
	}
	gone := errs.E(errs.KindConflict, link.MsgLinkGone)
	l, err := s.find(ctx, code)
	switch {
	case linkID != "" && (errs.IsKind(err, errs.KindNotFound) || err == nil && l.ID != linkID):
		return link.Link{}, gone
	case err != nil:
		return link.Link{}, err
	}
	// Bound to the id read, so a purge and a new link under code in between change nothing.
	if err := s.store.Update(ctx, code, Change{AutoRenew: &on, IfID: l.ID}); err != nil {
		if linkID != "" && errors.Is(err, ErrNotFound) {
			return link.Link{}, gone
		}
		return link.Link{}, storeError(err)
	}
	s.cache.Invalidate(ctx, code)
	l.AutoRenew = on
	return s.view(l), nil
}

// owned is the one ownership check: caller's live link code, or 404 for any other (unknown,
// deleted, or another owner's: no existence oracle).
func (s *Service) owned(ctx context.Context, caller identity.Caller, code string) (Link, error) {
	l, err := s.find(ctx, code)
	if err != nil {
		return Link{}, err
	}
	if caller.IsAnonymous() || l.OwnerID != caller.UserID {
		return Link{}, errs.NotFound(link.MsgNotFound)
	}
	return l, nil
}

// change applies ch to caller's live link code in one conditional update, then drops every
// cached copy. A link deleted between the check and the update is a 404, not a change.
func (s *Service) change(ctx context.Context, caller identity.Caller, l Link, ch Change) error {
	code, id := l.ShortCode, l.ID
	ok, err := s.store.UpdateLive(ctx, code, caller.UserID, ch)
	if err != nil {
		return storeError(err)
	}
	if !ok {
		// Deleted meanwhile (404), or, for a change that needs an active link, disabled
		// meanwhile (403, as if the read had seen it).
		if l, err := s.owned(ctx, caller, code); err == nil && ch.IfStatus != "" && l.Status != ch.IfStatus {
			return errs.Forbidden(link.MsgDisabled)
		}
		return errs.NotFound(link.MsgNotFound)
	}
	s.cache.Invalidate(ctx, code)
	s.kickRelay(id)
	return nil
}

// event is a fresh event of type typ, now.
func (s *Service) event(typ string) *Event {
	e := NewEvent(typ, s.now())
	return &e
}

// view is the owner and admin view of l.
func (s *Service) view(l Link) link.Link {
	return link.Link{ID: l.ID, ShortCode: l.ShortCode, ShortURL: s.ShortURL(l.ShortCode), DestinationURL: l.DestinationURL,
		OwnerID: l.OwnerID, Status: l.Status, Expired: l.Expired(s.now()), AutoRenew: l.AutoRenew,
		CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt, DeletedAt: l.DeletedAt, DestinationChangedAt: l.DestinationChangedAt}
}
