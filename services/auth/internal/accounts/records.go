package accounts

import (
	"context"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/paging"
)

// RecordQuery is a validated login-records query.
type RecordQuery struct {
	Filter RecordFilter
	Paging paging.Page
}

// ParseRecordQuery reads user_id, email, success, page and page_size through get (a query
// lookup); absent parameters read as "".
func ParseRecordQuery(get func(key string) string) (RecordQuery, error) {
	var q RecordQuery
	q.Filter.UserID = get("user_id")
	q.Filter.Email = NormalizeEmail(get("email"))
	switch v := get("success"); v {
	case "":
	case "true", "false":
		b := v == "true"
		q.Filter.Success = &b
	default:
		return RecordQuery{}, errs.Invalid("success must be true or false")
	}
	page, err := paging.Parse(get)
	if err != nil {
		return RecordQuery{}, err
	}
	q.Paging = page
	return q, nil
}

// LoginRecords lists login records, newest first, for a super admin.
func (s *Service) LoginRecords(ctx context.Context, caller identity.Caller, q RecordQuery) (auth.LoginRecords, error) {
	if _, err := s.superAdmin(ctx, caller); err != nil {
		return auth.LoginRecords{}, err
	}
	out := auth.LoginRecords{Records: []auth.LoginRecord{}, Page: q.Paging.Page, PageSize: q.Paging.PageSize}
	recs, total, err := s.store.LoginRecords(ctx, q.Filter, q.Paging.Skip(), q.Paging.Limit())
	if err != nil {
		return auth.LoginRecords{}, err
	}
	out.Total = total
	for _, r := range recs {
		out.Records = append(out.Records, auth.LoginRecord{ID: r.ID, UserID: r.UserID, Email: r.Email,
			Success: r.Success, Method: r.Method, Reason: r.Reason, IPHash: r.IPHash, UserAgent: r.UserAgent,
			CreatedAt: r.CreatedAt.UTC()})
	}
	return out, nil
}
