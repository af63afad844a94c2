package requests

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/paging"
)

// Report statuses, as the client package names them.
const (
	StatusResolved  = moderation.StatusResolved
	StatusDismissed = moderation.StatusDismissed
)

// Submit files caller's report of a link. The cheap checks come first, then the link
// service says whether the code exists (an unknown or deleted one is a 404), then one unit
// of the reporter's hourly window is taken, and given back if the report cannot be stored.
// Nothing about the reporter is stored.
func (s *Service) Submit(ctx context.Context, caller identity.Caller, body moderation.ReportBody) error {
	if body.ShortCode == nil || *body.ShortCode == "" {
		return errs.Invalid("short_code is required")
	}
	if body.Reason == nil || !slices.Contains(moderation.ReportReasons(), *body.Reason) {
		return errs.Invalid("reason must be one of %s", strings.Join(moderation.ReportReasons(), ", "))
	}
	var details string
	if body.Details != nil {
		details = *body.Details
	}
	if err := errs.Text("details", details, moderation.MaxDetailsLength); err != nil {
		return err
	}
	if caller.IPHash == "" {
		return errs.E(errs.KindInternal, "report without an identity key")
	}
	code := *body.ShortCode
	if !link.PlausibleCode(code) {
		return errs.NotFound(link.MsgNotFound)
	}
	l, err := s.links.Resolve(ctx, code)
	if err != nil {
		return err
	}
	rel, err := quota.Take(ctx, s.quota, quota.ReserveRequest{Scope: quota.ScopeReport, Key: caller.IPHash}, "too many reports")
	if err != nil {
		return err
	}
	r := Report{ID: s.newID(), LinkID: l.ID, ShortCode: l.ShortCode, Reason: *body.Reason, Details: details,
		Status: StatusPending, CreatedAt: s.now().UTC().Truncate(time.Millisecond)}
	if err := s.store.InsertReport(ctx, r); err != nil {
		if rerr := s.quota.Release(context.WithoutCancel(ctx), rel); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return err
	}
	return nil
}

// Reports is a page of reports for a moderator: status pending (default), resolved,
// dismissed or all, newest first.
func (s *Service) Reports(ctx context.Context, caller identity.Caller, get func(string) string) (moderation.ReportList, error) {
	if !caller.AtLeastModerator() {
		return moderation.ReportList{}, errs.Forbidden("moderator role required")
	}
	page, err := paging.Parse(get)
	if err != nil {
		return moderation.ReportList{}, err
	}
	status, err := statusFilter(get("status"), StatusResolved, StatusDismissed)
	if err != nil {
		return moderation.ReportList{}, err
	}
	found, total, err := s.store.Reports(ctx, status, page.Skip(), page.Limit())
	if err != nil {
		return moderation.ReportList{}, err
	}
	out := moderation.ReportList{Reports: make([]moderation.Report, 0, len(found)), Page: page.Page, PageSize: page.PageSize, Total: total}
	for _, r := range found {
		out.Reports = append(out.Reports, reportView(r))
	}
	return out, nil
}

// statusFilter reads a queue's status parameter: pending when absent, "" for all, or one of
// the final statuses; anything else is a 400 naming them.
func statusFilter(v string, final ...string) (string, error) {
	switch {
	case v == "":
		return StatusPending, nil
	case v == "all":
		return "", nil
	case v == StatusPending || slices.Contains(final, v):
		return v, nil
	}
	return "", errs.Invalid("status must be %s, %s or all", StatusPending, strings.Join(final, ", "))
}

// ResolveReport resolves or dismisses report id as idempotent steps, like Resolve:
//
//  1. claim the pending report for the action;
//  2. resolve with disable_link only: the link service disables the link (it writes that
//     action's own audit entry; a link deleted meanwhile has nothing left to disable);
//  3. write the resolution's audit entry, keyed by the report;
//  4. mark the report resolved or dismissed (only the holder gets here). A disable done by a
//     dead resolver stays, with its own audit entry.
//
// A crash between steps leaves the report pending and claimed, and resolving it again with
// the same action finishes it.
func (s *Service) ResolveReport(ctx context.Context, caller identity.Caller, id string, req moderation.ReportResolveRequest) (moderation.Report, error) {
	if !caller.AtLeastModerator() {
		return moderation.Report{}, errs.Forbidden("moderator role required")
	}
	final := map[string]string{moderation.ActionResolve: StatusResolved, moderation.ActionDismiss: StatusDismissed}[req.Action]
	if final == "" {
		return moderation.Report{}, errs.Invalid("action must be resolve or dismiss")
	}
	disable := req.DisableLink != nil && *req.DisableLink
	if disable && req.Action != moderation.ActionResolve {
		return moderation.Report{}, errs.Invalid("disable_link applies only to resolve")
	}
	var note string
	if req.Note != nil {
		note = *req.Note
	}
	if err := errs.Text("note", note, MaxTextLength); err != nil {
		return moderation.Report{}, err
	}
	r, err := s.store.Report(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return moderation.Report{}, errs.NotFound("report not found")
	}
	if err != nil {
		return moderation.Report{}, err
	}
	if _, err := s.claim(ctx, caller, QueueReports, r.ID, r.Status, req.Action); err != nil {
		return moderation.Report{}, err
	}
	if disable {
		if err := s.disableReported(ctx, r); err != nil {
			return moderation.Report{}, err
		}
	}
	now, err := s.settle(ctx, caller, QueueReports, r.ID, req.Action, final, note,
		map[string]any{"short_code": r.ShortCode, "note": note, "disable_link": disable}, nil)
	if err != nil {
		return moderation.Report{}, err
	}
	r.Status, r.ResolvedAt, r.ResolvedBy, r.ResolutionNote = final, &now, caller.UserID, note
	return reportView(r), nil
}

// disableReported disables the link r reports, unless it is gone: a code may have been
// deleted for good and taken again since, and another owner's link is not the one reported.
func (s *Service) disableReported(ctx context.Context, r Report) error {
	l, err := s.links.Resolve(ctx, r.ShortCode)
	if errs.IsKind(err, errs.KindNotFound) || (err == nil && l.ID != r.LinkID) {
		return nil
	}
	if err != nil {
		return err
	}
	reason := "report " + r.ID + ": " + r.Reason
	if _, err := s.links.Disable(ctx, r.ShortCode, link.DisableRequest{Reason: &reason}); err != nil && !errs.IsKind(err, errs.KindNotFound) {
		return err
	}
	return nil
}

// DeleteReports deletes every report of linkID, a step of its permanent deletion.
func (s *Service) DeleteReports(ctx context.Context, caller identity.Caller, linkID string) error {
	if !caller.AtLeastModerator() && !caller.IsService(config.Link) {
		return errs.Forbidden("moderator role required")
	}
	return s.store.DeleteReports(ctx, linkID)
}

// reportView is the moderators' view of r.
func reportView(r Report) moderation.Report {
	v := moderation.Report{ID: r.ID, ShortCode: r.ShortCode, Reason: r.Reason, Details: r.Details, Status: r.Status,
		CreatedAt: r.CreatedAt, ResolvedAt: r.ResolvedAt}
	if r.Status != StatusPending {
		v.ResolvedBy, v.ResolutionNote = &r.ResolvedBy, &r.ResolutionNote
	}
	return v
}
