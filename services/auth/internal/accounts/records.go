package accounts

import (
	"context"
	"strconv"

	"github.com/linkmesh/linkmesh/pkg/clients/auth"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// Paging bounds of lists.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// RecordQuery is a validated login-records query.
type RecordQuery struct {
	Filter   RecordFilter
	Page     int
	PageSize int
}

// ParseRecordQuery reads user_id, email, success, page and page_size through get (a query
// lookup); absent parameters read as "".
func ParseRecordQuery(get func(key string) string) (RecordQuery, error) {
	q := RecordQuery{Page: 1, PageSize: DefaultPageSize}
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
	if v := get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return RecordQuery{}, errs.Invalid("page must be a positive integer")
		}
		q.Page = n
	}
	if v := get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return RecordQuery{}, errs.Invalid("page_size must be between 1 and %d", MaxPageSize)
		}
		q.PageSize = n
	}
	return q, nil
}

// LoginRecords lists login records, newest first, for a super admin.
func (s *Service) LoginRecords(ctx context.Context, caller identity.Caller, q RecordQuery) (auth.LoginRecords, error) {
	if _, err := s.superAdmin(ctx, caller); err != nil {
		return auth.LoginRecords{}, err
	}
	out := auth.LoginRecords{Records: []auth.LoginRecord{}, Page: q.Page, PageSize: q.PageSize}
	// skip = (page-1)*page_size in int64; a page far past the end reads nothing instead of
	// overflowing.
	skip := int64(q.Page-1) * int64(q.PageSize)
	if int64(q.Page-1) > (1<<62)/int64(q.PageSize) {
		skip = 1 << 62
	}
	recs, total, err := s.store.LoginRecords(ctx, q.Filter, skip, int64(q.PageSize))
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
