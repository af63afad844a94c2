package accounts

import (
	"context"
	"strings"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/paging"
)

// MaxUserQueryLength bounds q of the user list: no e-mail or name is longer.
const MaxUserQueryLength = MaxEmailLength

// UserQuery is a validated admin user-list query; the service sets Filter.Now.
type UserQuery struct {
	Filter UserFilter
	Paging paging.Page
}

// ParseUserQuery reads q, role, status, page and page_size through get (a query lookup);
// absent parameters read as "" and a bad value is a 400 naming the parameter. q is taken
// literally, so that ".*" or "(" search for those characters; surrounding spaces are
// dropped, as no stored e-mail or name has any.
func ParseUserQuery(get func(key string) string) (UserQuery, error) {
	var q UserQuery
	contains := strings.TrimSpace(get("q"))
	if err := errs.SearchText("q", contains, MaxUserQueryLength); err != nil {
		return UserQuery{}, err
	}
	q.Filter.Contains = contains
	switch role := get("role"); role {
	case "", auth.RoleUser, auth.RoleModerator, auth.RoleSuperAdmin:
		q.Filter.Role = role
	default:
		return UserQuery{}, errs.Invalid("role must be one of %s, %s, %s", auth.RoleUser, auth.RoleModerator, auth.RoleSuperAdmin)
	}
	switch status := get("status"); status {
	case "", auth.StatusActive, auth.StatusSuspended, auth.StatusBanned:
		q.Filter.Status = status
	default:
		return UserQuery{}, errs.Invalid("status must be one of %s, %s, %s", auth.StatusActive, auth.StatusSuspended, auth.StatusBanned)
	}
	page, err := paging.Parse(get)
	if err != nil {
		return UserQuery{}, err
	}
	q.Paging = page
	return q, nil
}

// Users lists the accounts matching q, newest first, for a moderator or super admin. The
// status filter and each user's status are derived at the same instant, so a listed
// suspended user reads suspended.
func (s *Service) Users(ctx context.Context, caller identity.Caller, q UserQuery) (auth.UserList, error) {
	if _, err := s.moderator(ctx, caller); err != nil {
		return auth.UserList{}, err
	}
	now := s.now()
	q.Filter.Now = now
	found, total, err := s.store.Users(ctx, q.Filter, q.Paging.Skip(), q.Paging.Limit())
	if err != nil {
		return auth.UserList{}, err
	}
	out := auth.UserList{Users: make([]auth.User, 0, len(found)), Page: q.Paging.Page, PageSize: q.Paging.PageSize, Total: total}
	for _, u := range found {
		out.Users = append(out.Users, u.View(now))
	}
	return out, nil
}

// UserCounts counts all accounts and those of each status, for a moderator's overview. Each
// count is what the list filtered by that status would total at the same instant.
func (s *Service) UserCounts(ctx context.Context, caller identity.Caller) (auth.UserCounts, error) {
	if _, err := s.moderator(ctx, caller); err != nil {
		return auth.UserCounts{}, err
	}
	now := s.now()
	var out auth.UserCounts
	for _, c := range []struct {
		status string
		n      *int64
	}{{"", &out.Total}, {auth.StatusActive, &out.Active}, {auth.StatusSuspended, &out.Suspended}, {auth.StatusBanned, &out.Banned}} {
		n, err := s.store.CountUsers(ctx, UserFilter{Status: c.status, Now: now})
		if err != nil {
			return auth.UserCounts{}, err
		}
		*c.n = n
	}
	return out, nil
}
