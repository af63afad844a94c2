package links

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/paging"
)

// MaxReasonLength bounds a moderator's reason, in characters.
const MaxReasonLength = 2000

// PurgeLease is how long a started permanent deletion is left to the request that started
// it before the sweeper finishes it.
const PurgeLease = time.Minute

// Moderation is what the admin actions need of the moderation service;
// *moderation.Client satisfies it.
type Moderation interface {
	// Audit records the caller's action; an action whose entry fails must not stand.
	Audit(ctx context.Context, rec moderation.AuditRecord) error
	// DeleteReports deletes every report of a link; again, it does nothing.
	DeleteReports(ctx context.Context, linkID string) error
}

var errModeratorRequired = errs.Forbidden("moderator role required")

// parseList reads the paging, status and q of a list; a bad value is a 400 naming it.
func parseList(get func(string) string, now time.Time) (ListQuery, paging.Page, error) {
	page, err := paging.Parse(get)
	if err != nil {
		return ListQuery{}, page, err
	}
	q := ListQuery{State: StateAll, Now: now, Skip: page.Skip(), Limit: page.Limit()}
	switch v := get("status"); v {
	case "", StateAll:
	case StateActive, StateExpired, StateDisabled:
		q.State = v
	default:
		return ListQuery{}, page, errs.Invalid("status must be active, expired, disabled or all")
	}
	q.Contains = get("q")
	if err := errs.SearchText("q", q.Contains, MaxQueryLength); err != nil {
		return ListQuery{}, page, err
	}
	return q, page, nil
}

// AdminList lists anyone's links for a moderator: the owner's list's parameters plus
// owner_id and include_deleted, each link with its owner_id and click_count.
func (s *Service) AdminList(ctx context.Context, caller identity.Caller, get func(string) string) (link.List, error) {
	if !caller.AtLeastModerator() {
		return link.List{}, errModeratorRequired
	}
	q, page, err := parseList(get, s.now().UTC())
	if err != nil {
		return link.List{}, err
	}
	q.OwnerID = get("owner_id")
	q.AnyOwner = q.OwnerID == ""
	if len(q.OwnerID) > 128 || !utf8.ValidString(q.OwnerID) {
		return link.List{}, errs.Invalid("owner_id must be a user id")
	}
	switch get("include_deleted") {
	case "", "false":
	case "true":
		q.IncludeDeleted = true
	default:
		return link.List{}, errs.Invalid("include_deleted must be true or false")
	}
	found, total, err := s.store.List(ctx, q)
	if err != nil {
		return link.List{}, err
	}
	out := link.List{Links: make([]link.Link, 0, len(found)), Page: page.Page, PageSize: page.PageSize, Total: total}
	for _, l := range found {
		out.Links = append(out.Links, s.view(l))
	}
	if _, err := s.countClicks(ctx, "", out.Links); err != nil {
		return link.List{}, err
	}
	return out, nil
}

// Counts counts the stored links by state for a moderator's overview.
func (s *Service) Counts(ctx context.Context, caller identity.Caller) (link.LinkCounts, error) {
	if !caller.AtLeastModerator() {
		return link.LinkCounts{}, errModeratorRequired
	}
	n, err := s.store.CountStates(ctx, s.now().UTC())
	return n, storeError(err)
}

// Disable switches the live link code off for its visitors (403 on every gateway within a
// second), with the moderator's reason. Disabling a disabled link changes nothing and
// writes no audit entry.
func (s *Service) Disable(ctx context.Context, caller identity.Caller, code string, req link.DisableRequest) (link.Link, error) {
	if !caller.AtLeastModerator() {
		return link.Link{}, errModeratorRequired
	}
	detail := map[string]any{"short_code": code}
	if req.Reason != nil {
		if err := errs.Text("reason", *req.Reason, MaxReasonLength); err != nil {
			return link.Link{}, err
		}
		detail["reason"] = *req.Reason
	}
	return s.switchStatus(ctx, code, link.StatusActive, link.StatusDisabled, moderation.AuditLinkDisable, detail,
		Change{DisabledReason: req.Reason})
}

// Enable switches the disabled live link code back on. Enabling an enabled link changes
// nothing and writes no audit entry.
func (s *Service) Enable(ctx context.Context, caller identity.Caller, code string) (link.Link, error) {
	if !caller.AtLeastModerator() {
		return link.Link{}, errModeratorRequired
	}
	return s.switchStatus(ctx, code, link.StatusDisabled, link.StatusActive, moderation.AuditLinkEnable,
		map[string]any{"short_code": code}, Change{ClearDisabledReason: true})
}

// switchStatus moves the live link code from one status to the other as steps that never
// leave an unaudited change: the conditional update, the audit entry, and, when the entry
// cannot be written, the status and reason read put back while the link is still at the
// revision the update wrote. Every cache then drops the code.
func (s *Service) switchStatus(ctx context.Context, code, from, to, action string, detail map[string]any, do Change) (link.Link, error) {
	l, err := s.find(ctx, code)
	if err != nil {
		return link.Link{}, err
	}
	if l.Status == to {
		return s.view(l), nil
	}
	undo := Change{Status: &from, DisabledReason: l.DisabledReason, ClearDisabledReason: l.DisabledReason == nil,
		Event: s.event(statusEvent(from))}
	do.Status, do.Event = &to, s.event(statusEvent(to))
	written, changed, err := s.store.UpdateIf(ctx, code, from, do)
	if err != nil {
		return link.Link{}, storeError(err)
	}
	if !changed {
		if again, err := s.find(ctx, code); err != nil || again.Status == to {
			return s.view(again), err
		}
		return link.Link{}, errs.E(errs.KindConflict, "the link was changed at the same time; try again")
	}
	rec := moderation.AuditRecord{ID: bson.NewObjectID().Hex(), Action: action, TargetType: moderation.TargetLink, TargetID: l.ID, Detail: detail}
	if err := s.mod.Audit(ctx, rec); err != nil {
		ctx := context.WithoutCancel(ctx)
		// Only while nobody changed it since: a later, audited change stands.
		if _, uerr := s.store.Undo(ctx, written.ID, written.Rev, undo); uerr != nil {
			s.log.ErrorContext(ctx, "undo an unaudited link change", "short_code", code, "to", to, "err", uerr)
			err = errors.Join(err, uerr)
		}
		s.cache.Invalidate(ctx, code)
		s.kickRelay(written.ID)
		return link.Link{}, err
	}
	s.cache.Invalidate(ctx, code)
	s.kickRelay(written.ID)
	l.Status = to
	v := []link.Link{s.view(l)}
	// The action stands; an analytics outage only leaves its answer's click_count at 0.
	if _, err := s.countClicks(ctx, "", v); err != nil {
		s.log.WarnContext(ctx, "count clicks of a changed link", "short_code", code, "err", err)
	}
	return v[0], nil
}

// statusEvent is the event of a switch to status.
func statusEvent(status string) string {
	if status == link.StatusDisabled {
		return link.EventDisabled
	}
	return link.EventEnabled
}

// DisableOwner disables every live enabled link of ownerID (a ban's deactivate_links) and
// says how many; each answers 403 on every gateway within a second. The ban that asks for
// it carries the audit entry.
func (s *Service) DisableOwner(ctx context.Context, caller identity.Caller, ownerID string, req link.DisableRequest) (int64, error) {
	if !caller.AtLeastModerator() {
		return 0, errModeratorRequired
	}
	if ownerID == "" || len(ownerID) > 128 {
		return 0, errs.Invalid("owner id must be a user id")
	}
	if r := req.Reason; r != nil {
		if err := errs.Text("reason", *r, MaxReasonLength); err != nil {
			return 0, err
		}
	}
	disabled, err := s.store.DisableOwner(ctx, ownerID, req.Reason, s.now())
	ids := make([]string, 0, len(disabled))
	for _, l := range disabled { // those disabled before a failure too
		s.cache.Invalidate(ctx, l.ShortCode)
		ids = append(ids, l.ID)
	}
	s.kickRelay(ids...)
	if err != nil {
		return 0, storeError(err)
	}
	return int64(len(disabled)), nil
}

// Purge deletes the link code for good — soft-deleted or not — with its clicks and rollups
// and its reports. Without transactions, it is a sequence of idempotent steps:
//
//  1. mark the link (and soft-delete it): from here on it answers 404 everywhere;
//  2. write the audit entry, keyed by the link, so a repeat writes nothing new;
//  3. purge its analytics; 4. delete its reports; 5. delete the document.
//
// A failure at any step leaves the mark, so calling Purge again, or the sweeper after
// PurgeLease, finishes the remaining steps in the name of whoever marked it. The audit entry
// precedes every step that cannot be undone.
func (s *Service) Purge(ctx context.Context, caller identity.Caller, code string) error {
	if !caller.AtLeastModerator() {
		return errModeratorRequired
	}
	if !link.PlausibleCode(code) {
		return errs.NotFound(link.MsgNotFound)
	}
	l, err := s.store.FindByCode(ctx, code)
	if errors.Is(err, ErrNotFound) {
		return errs.NotFound(link.MsgNotFound)
	}
	if err != nil {
		return err
	}
	if l.Purge == nil {
		m, err := s.store.MarkPurge(ctx, l.ID, PurgeMark{By: caller.UserID, Role: caller.Role, IPHash: caller.IPHash,
			UserAgent: caller.UserAgent, At: s.now().UTC().Truncate(time.Millisecond)})
		if errors.Is(err, ErrNotFound) { // deleted by a concurrent purge
			return errs.NotFound(link.MsgNotFound)
		}
		if err != nil {
			return storeError(err)
		}
		l.Purge = &m
	}
	s.cache.Invalidate(ctx, code)
	return s.finishPurge(ctx, l)
}

// finishPurge runs the steps after the mark. The link service takes them as itself — the
// same on the moderator's request and in the sweeper, long after that request's token
// expired — and names whoever marked l as the audit entry's actor.
func (s *Service) finishPurge(ctx context.Context, l Link) error {
	m := *l.Purge
	ctx = s.keys.AsService(ctx)
	rec := moderation.AuditRecord{ID: "link.delete:" + l.ID, Action: moderation.AuditLinkDelete, TargetType: moderation.TargetLink,
		TargetID: l.ID, Detail: map[string]any{"short_code": l.ShortCode, "owner_id": l.OwnerID},
		Actor: &moderation.AuditActor{ID: m.By, IPHash: m.IPHash, UserAgent: m.UserAgent}}
	if err := s.mod.Audit(ctx, rec); err != nil {
		return err
	}
	if err := s.clicks.Purge(ctx, l.ID); err != nil {
		return err
	}
	if err := s.mod.DeleteReports(ctx, l.ID); err != nil {
		return err
	}
	// The link.purged event (written with the mark) would leave with the document.
	if err := s.deliverLink(ctx, l.ID); err != nil {
		return err
	}
	if err := s.store.DeleteByID(ctx, l.ID); err != nil {
		return err
	}
	s.cache.Invalidate(ctx, l.ShortCode)
	return nil
}

// FinishPurges finishes the deletions started more than PurgeLease before now, whose
// request failed or died; it returns how many it finished. Several replicas may run it at
// once: every step is idempotent.
func (s *Service) FinishPurges(ctx context.Context, now time.Time) (int64, error) {
	due, err := s.store.PurgesDue(ctx, now.Add(-PurgeLease), 100)
	if err != nil {
		return 0, err
	}
	var done int64
	var failed error
	for _, l := range due {
		if err := s.finishPurge(ctx, l); err != nil {
			failed = errors.Join(failed, fmt.Errorf("finish deletion of %s: %w", l.ShortCode, err))
			continue
		}
		done++
	}
	return done, failed
}
