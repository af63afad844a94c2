package accounts

import (
	"context"
	"errors"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// signedInSession is the caller of a session's own routes: a signed-in user through a
// session (an API token never manages sessions).
func signedInSession(caller identity.Caller) error {
	if caller.UserID == "" {
		return errs.E(errs.KindUnauthenticated, "authentication required")
	}
	if caller.TokenID != "" || caller.SessionID == "" {
		return errs.Forbidden("sessions are managed from a signed-in session, not with an API token")
	}
	return nil
}

// sessionUser is the account of a signed-in session (see signedInSession); an account gone
// since the session was checked makes the session invalid.
func (s *Service) sessionUser(ctx context.Context, caller identity.Caller) (User, error) {
	u, err := s.store.UserByID(ctx, caller.UserID)
	if errors.Is(err, ErrUserNotFound) {
		return User{}, sessionInvalid()
	}
	return u, err
}

// Sessions lists the caller's live sessions, newest first, the one they call from marked
// current: when each began, was last seen (to the minute) and with what User-Agent. Never
// a token, never an address.
func (s *Service) Sessions(ctx context.Context, caller identity.Caller) (auth.SessionList, error) {
	if err := signedInSession(caller); err != nil {
		return auth.SessionList{}, err
	}
	found, err := s.store.SessionsOf(ctx, caller.UserID, s.now())
	if err != nil {
		return auth.SessionList{}, err
	}
	out := auth.SessionList{Sessions: make([]auth.SessionInfo, 0, len(found))}
	for _, sess := range found {
		id := sess.ID()
		out.Sessions = append(out.Sessions, auth.SessionInfo{ID: id, Current: id == caller.SessionID,
			CreatedAt: sess.CreatedAt.UTC(), LastSeenAt: utc(sess.LastSeenAt), UserAgent: sess.UserAgent})
	}
	return out, nil
}

// RevokeSession ends the caller's session id at once (the current one too, which signs them
// out), or, for auth.RevokeOthers, every session but the current one. Another account's
// session, or an unknown id, is a 404.
func (s *Service) RevokeSession(ctx context.Context, caller identity.Caller, id string) error {
	if err := signedInSession(caller); err != nil {
		return err
	}
	found, err := s.store.SessionsOf(ctx, caller.UserID, s.now())
	if err != nil {
		return err
	}
	var hashes []string
	for _, sess := range found {
		sid := sess.ID()
		if id == auth.RevokeOthers && sid != caller.SessionID || id == sid {
			hashes = append(hashes, sess.Hash)
		}
	}
	if len(hashes) == 0 && id != auth.RevokeOthers {
		return errs.NotFound("session not found")
	}
	if len(hashes) == 0 {
		return nil
	}
	_, err = s.store.DeleteSessions(ctx, caller.UserID, hashes)
	return err
}

// Export is everything the service keeps of the caller, to take away: the account, its live
// links with their analytics (from the link service, on the caller's behalf), its API
// tokens' and sessions' metadata. Never a password hash, a token or an address. From a
// signed-in session only.
func (s *Service) Export(ctx context.Context, caller identity.Caller) (auth.AccountExport, error) {
	if err := signedInSession(caller); err != nil {
		return auth.AccountExport{}, err
	}
	// Each export reads a year of analytics of every link: ExportLimit an hour.
	if _, err := quota.Take(ctx, s.quota, quota.ReserveRequest{Scope: quota.ScopeExport, Key: caller.UserID},
		"too many exports; try again later"); err != nil {
		return auth.AccountExport{}, err
	}
	now := s.now()
	u, err := s.store.UserByID(ctx, caller.UserID)
	if errors.Is(err, ErrUserNotFound) {
		return auth.AccountExport{}, sessionInvalid()
	}
	if err != nil {
		return auth.AccountExport{}, err
	}
	tokens, err := s.Tokens(ctx, caller)
	if err != nil {
		return auth.AccountExport{}, err
	}
	sessions, err := s.Sessions(ctx, caller)
	if err != nil {
		return auth.AccountExport{}, err
	}
	links, err := s.links.Export(ctx)
	if err != nil {
		return auth.AccountExport{}, err
	}
	return auth.AccountExport{ExportedAt: now.UTC(), Account: u.View(now), Links: links.Links,
		Tokens: tokens.Tokens, Sessions: sessions.Sessions}, nil
}
