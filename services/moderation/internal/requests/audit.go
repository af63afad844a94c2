package requests

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/config"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/paging"
)

// MaxAuditDetail bounds the encoded detail of one audit entry, in bytes: room for a reason
// of 2,000 characters even when every one is escaped to six bytes.
const MaxAuditDetail = 32 << 10

// auditActions are the actions other services record; the moderation service writes its
// own (reports, permanent requests) directly.
var auditActions = []string{moderation.AuditUserTimeout, moderation.AuditUserBan, moderation.AuditUserUnban,
	moderation.AuditUserRole, moderation.AuditLinkDisable, moderation.AuditLinkEnable, moderation.AuditLinkDelete}

// Record writes the audit entry of an action caller took in another service. The actor, IP
// hash and User-Agent are the caller's, from its identity token, never from the record —
// except for the link service acting as itself, which finishes a permanent deletion after the
// moderator's request ended and names the moderator who started it. A record with an id
// already written writes nothing (a retried step).
func (s *Service) Record(ctx context.Context, caller identity.Caller, rec moderation.AuditRecord) error {
	actor := moderation.AuditActor{ID: caller.UserID, IPHash: caller.IPHash, UserAgent: caller.UserAgent}
	switch {
	case caller.IsService(config.Link):
		// Only the entry of the deletion it finishes, under the id that deletion uses.
		if rec.Action != moderation.AuditLinkDelete || rec.TargetType != moderation.TargetLink || rec.ID != "link.delete:"+rec.TargetID {
			return errs.Forbidden("moderator role required")
		}
		if rec.Actor == nil || rec.Actor.ID == "" || len(rec.Actor.ID) > 200 || len(rec.Actor.IPHash) > 128 ||
			len(rec.Actor.UserAgent) > identity.MaxUserAgent || !utf8.ValidString(rec.Actor.ID+rec.Actor.IPHash+rec.Actor.UserAgent) {
			return errs.Invalid("actor must name who took the action")
		}
		actor = *rec.Actor
	case !caller.AtLeastModerator():
		return errs.Forbidden("moderator role required")
	}
	if rec.ID == "" || len(rec.ID) > 200 || !utf8.ValidString(rec.ID) {
		return errs.Invalid("id must be 1 to 200 characters")
	}
	if !slices.Contains(auditActions, rec.Action) {
		return errs.Invalid("action is not an audited action")
	}
	if rec.TargetType != moderation.TargetUser && rec.TargetType != moderation.TargetLink {
		return errs.Invalid("target_type must be user or link")
	}
	if rec.TargetID == "" || len(rec.TargetID) > 200 || !utf8.ValidString(rec.TargetID) {
		return errs.Invalid("target_id must be 1 to 200 characters")
	}
	if b, err := json.Marshal(rec.Detail); err != nil || len(b) > MaxAuditDetail {
		return errs.Invalid("detail must be an object of at most %d bytes", MaxAuditDetail)
	}
	return s.store.InsertAudit(ctx, AuditEntry{ID: rec.ID, ActorID: actor.ID, Action: rec.Action, TargetType: rec.TargetType,
		TargetID: rec.TargetID, Detail: rec.Detail, IPHash: actor.IPHash, UserAgent: actor.UserAgent,
		CreatedAt: s.now().UTC().Truncate(time.Millisecond)})
}

// AuditLog is a page of the audit log for a super admin, newest first, filtered by
// actor_id and action.
func (s *Service) AuditLog(ctx context.Context, caller identity.Caller, get func(string) string) (moderation.AuditLog, error) {
	if caller.Role != auth.RoleSuperAdmin {
		return moderation.AuditLog{}, errs.Forbidden("super admin role required")
	}
	page, err := paging.Parse(get)
	if err != nil {
		return moderation.AuditLog{}, err
	}
	actor, action := get("actor_id"), get("action")
	if len(actor) > 200 || !utf8.ValidString(actor) {
		return moderation.AuditLog{}, errs.Invalid("actor_id must be a user id")
	}
	if len(action) > 100 || !utf8.ValidString(action) {
		return moderation.AuditLog{}, errs.Invalid("action must be an audited action")
	}
	found, total, err := s.store.Audit(ctx, actor, action, page.Skip(), page.Limit())
	if err != nil {
		return moderation.AuditLog{}, err
	}
	out := moderation.AuditLog{Entries: make([]moderation.AuditEntry, 0, len(found)), Page: page.Page, PageSize: page.PageSize, Total: total}
	for _, e := range found {
		detail := e.Detail
		if detail == nil {
			detail = map[string]any{}
		}
		out.Entries = append(out.Entries, moderation.AuditEntry{ID: e.ID, ActorID: e.ActorID, Action: e.Action,
			TargetType: e.TargetType, TargetID: e.TargetID, Detail: detail, IPHash: e.IPHash, UserAgent: e.UserAgent, CreatedAt: e.CreatedAt})
	}
	return out, nil
}

// Overview counts users, links, clicks and pending work for a moderator. Each owner counts
// its own, all asked at once: users by status (auth), links by state (link, from its
// counters), clicks from the fold's totals (analytics), and the two queues here.
func (s *Service) Overview(ctx context.Context, caller identity.Caller) (moderation.Overview, error) {
	var out moderation.Overview
	if !caller.AtLeastModerator() {
		return out, errs.Forbidden("moderator role required")
	}
	var (
		users  auth.UserCounts
		links  link.LinkCounts
		clicks analytics.Totals
		wg     sync.WaitGroup
		failed [5]error
	)
	wg.Go(func() { users, failed[0] = s.users.UserCounts(ctx) })
	wg.Go(func() { links, failed[1] = s.links.Counts(ctx) })
	wg.Go(func() { clicks, failed[2] = s.clicks.Totals(ctx) })
	wg.Go(func() { out.Reports.Pending, failed[3] = s.store.CountPending(ctx, QueueReports) })
	wg.Go(func() { out.PermanentRequests.Pending, failed[4] = s.store.CountPending(ctx, QueuePermanent) })
	wg.Wait()
	for _, err := range failed {
		if err != nil {
			return moderation.Overview{}, err
		}
	}
	out.Users.Total, out.Users.Active, out.Users.Suspended, out.Users.Banned = users.Total, users.Active, users.Suspended, users.Banned
	out.Links.Total, out.Links.Active, out.Links.Expired, out.Links.Disabled, out.Links.Deleted = links.Total, links.Active, links.Expired, links.Disabled, links.Deleted
	out.Clicks.Total, out.Clicks.Last24h = clicks.Total, clicks.Last24h
	return out, nil
}
