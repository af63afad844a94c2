// Package paging reads the list parameters every linkmesh list accepts: page (1-based,
// default 1) and page_size (default 20, at most 100), as the API contract sets them.
package paging

import (
	"strconv"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

// Bounds of a page.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Page is a validated page of a list.
type Page struct {
	Page     int `json:"page"`
	PageSize int `json:"page_size"`
}

// Parse reads page and page_size through get (a query lookup; absent parameters read as
// ""); a bad value is a 400 naming the parameter.
func Parse(get func(key string) string) (Page, error) {
	p := Page{Page: 1, PageSize: DefaultPageSize}
	if v := get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Page{}, errs.Invalid("page must be a positive integer")
		}
		p.Page = n
	}
	if v := get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageSize {
			return Page{}, errs.Invalid("page_size must be between 1 and %d", MaxPageSize)
		}
		p.PageSize = n
	}
	return p, nil
}

// Skip is how many items precede the page. A page far past any list reads nothing instead
// of overflowing.
func (p Page) Skip() int64 {
	if int64(p.Page-1) > (1<<62)/int64(p.PageSize) {
		return 1 << 62
	}
	return int64(p.Page-1) * int64(p.PageSize)
}

// Limit is the page's size.
func (p Page) Limit() int64 { return int64(p.PageSize) }

// Params are the query parameters Parse reads, for a route that passes them on.
func Params() []string { return []string{"page", "page_size"} }
