package requests

import (
	"context"
	"errors"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/moderation"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// Resolve approves or rejects request id, as idempotent steps that heal on retry, without
// transactions:
//
//  1. claim the pending request for the action (a unique hold; another action is refused
//     while the hold is fresh, and undoes the approval of a dead resolver it takes over);
//  2. approve only: the link service sets the link's auto_renew (idempotent);
//  3. write the audit entry, keyed by the request, so a repeat writes nothing new;
//  4. mark the request resolved (only the holder gets here).
//
// A crash between steps leaves the request pending and claimed; resolving it again with the
// same action finishes the remaining steps, so no request ends approved with a link that does
// not auto-renew. An approval whose audit entry cannot be written is undone.
func (s *Service) Resolve(ctx context.Context, caller identity.Caller, id string, req moderation.ResolveRequest) (moderation.PermanentRequest, error) {
	if !caller.AtLeastModerator() {
		return moderation.PermanentRequest{}, errs.Forbidden("moderator role required")
	}
	final := map[string]string{moderation.ActionApprove: StatusApproved, moderation.ActionReject: StatusRejected}[req.Action]
	if final == "" {
		return moderation.PermanentRequest{}, errs.Invalid("action must be approve or reject")
	}
	var note string
	if req.Note != nil {
		note = *req.Note
	}
	if err := errs.Text("note", note, MaxTextLength); err != nil {
		return moderation.PermanentRequest{}, err
	}
	r, err := s.store.Request(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return moderation.PermanentRequest{}, errs.NotFound("permanent request not found")
	}
	if err != nil {
		return moderation.PermanentRequest{}, err
	}
	took, err := s.claim(ctx, caller, QueuePermanent, r.ID, r.Status, req.Action)
	if err != nil {
		return moderation.PermanentRequest{}, err
	}
	// An approval sets the auto_renew of the request's link, by its id: if the link is gone
	// (purged, its code perhaps another link's now) the approval is a 409 and the request
	// stays pending for a rejection. A rejection taking over from an approval that died half
	// way takes it off again, if that link still exists.
	if req.Action == moderation.ActionApprove || took == moderation.ActionApprove {
		_, err := s.links.SetAutoRenew(ctx, r.ShortCode, r.LinkID, req.Action == moderation.ActionApprove)
		switch {
		case err != nil && req.Action == moderation.ActionApprove && linkGone(err):
			// Nothing happened: let a rejection through at once.
			if uerr := s.store.Unclaim(context.WithoutCancel(ctx), QueuePermanent, r.ID, req.Action); uerr != nil {
				err = errors.Join(err, uerr)
			}
			return moderation.PermanentRequest{}, err
		case err != nil && (req.Action == moderation.ActionApprove || !linkGone(err)):
			return moderation.PermanentRequest{}, err
		}
	}
	var undo func() error
	if req.Action == moderation.ActionApprove {
		undo = func() error {
			_, err := s.links.SetAutoRenew(context.WithoutCancel(ctx), r.ShortCode, r.LinkID, false)
			if linkGone(err) {
				return nil
			}
			return err
		}
	}
	now, err := s.settle(ctx, caller, QueuePermanent, r.ID, req.Action, final, note, map[string]any{"short_code": r.ShortCode, "note": note}, undo)
	if err != nil {
		return moderation.PermanentRequest{}, err
	}
	r.Status, r.ResolvedAt, r.ResolvedBy, r.ResolutionNote = final, &now, caller.UserID, note
	return view(r), nil
}

// linkGone tells the link service's answer that a request's link no longer exists.
func linkGone(err error) bool {
	e, ok := errs.As(err)
	return ok && e.Kind == errs.KindConflict && e.Message == link.MsgLinkGone
}

// claim takes entry id of queue q, whose status was read as status, for action, or says
// why not: 409 resolved, 409 being resolved the other way. It returns the action of a dead
// resolver's hold it took over.
func (s *Service) claim(ctx context.Context, caller identity.Caller, q Queue, id, status, action string) (string, error) {
	resolved := errs.E(errs.KindConflict, "%s already resolved", q)
	if status != StatusPending {
		return "", resolved
	}
	now := s.now().UTC()
	ok, took, err := s.store.Claim(ctx, q, id, action, caller.UserID, now, now.Add(-claimLease))
	if err != nil {
		return "", err
	}
	if !ok {
		if again, err := s.statusOf(ctx, q, id); err == nil && again != StatusPending {
			return "", resolved
		}
		return "", errs.E(errs.KindConflict, "%s is being resolved", q)
	}
	return took, nil
}

// settle writes the audit entry of resolving entry id of queue q with action, keyed by the
// entry and the action so that a retry writes nothing new, then marks the entry final. When
// the entry cannot be written, undo (if any) takes the resolution's side effect back. It
// returns when the resolution happened.
func (s *Service) settle(ctx context.Context, caller identity.Caller, q Queue, id, action, final, note string, detail map[string]any, undo func() error) (time.Time, error) {
	now := s.now().UTC().Truncate(time.Millisecond)
	target := q.target()
	entry := AuditEntry{ID: target + ":" + id + ":" + action, ActorID: caller.UserID, Action: target + "." + action,
		TargetType: target, TargetID: id, Detail: detail, IPHash: caller.IPHash, UserAgent: caller.UserAgent, CreatedAt: now}
	if err := s.store.InsertAudit(ctx, entry); err != nil {
		if undo != nil {
			if uerr := undo(); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}
		return now, err
	}
	finished, err := s.store.Finish(ctx, q, id, action, final, caller.UserID, note, now)
	if err != nil {
		return now, err
	}
	if !finished { // a concurrent resolution with the same action got there first
		return now, errs.E(errs.KindConflict, "%s already resolved", q)
	}
	return now, nil
}

// statusOf reads the status of entry id of queue q.
func (s *Service) statusOf(ctx context.Context, q Queue, id string) (string, error) {
	if q == QueueReports {
		r, err := s.store.Report(ctx, id)
		return r.Status, err
	}
	r, err := s.store.Request(ctx, id)
	return r.Status, err
}
