package paging

import (
	"math"
	"strconv"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

func TestParse(t *testing.T) {
	cases := []struct {
		page, size string
		want       Page
		msg        string
	}{
		{"", "", Page{1, 20}, ""},
		{"3", "100", Page{3, 100}, ""},
		{"0", "", Page{}, "page must be a positive integer"},
		{"-1", "", Page{}, "page must be a positive integer"},
		{"1.5", "", Page{}, "page must be a positive integer"},
		{"x", "", Page{}, "page must be a positive integer"},
		{"99999999999999999999", "", Page{}, "page must be a positive integer"},
		{"", "0", Page{}, "page_size must be between 1 and 100"},
		{"", "101", Page{}, "page_size must be between 1 and 100"},
		{"", " 5", Page{}, "page_size must be between 1 and 100"},
	}
	for _, tc := range cases {
		got, err := Parse(func(k string) string { return map[string]string{"page": tc.page, "page_size": tc.size}[k] })
		if tc.msg != "" {
			if e, ok := errs.As(err); !ok || e.Kind != errs.KindInvalid || e.Message != tc.msg {
				t.Errorf("page %q size %q: got %v, want 400 %q", tc.page, tc.size, err, tc.msg)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("page %q size %q: got %+v %v, want %+v", tc.page, tc.size, got, err, tc.want)
		}
	}
}

func TestSkip(t *testing.T) {
	if s := (Page{Page: 3, PageSize: 20}).Skip(); s != 40 {
		t.Fatalf("skip = %d", s)
	}
	if s := (Page{Page: math.MaxInt, PageSize: 100}).Skip(); s != 1<<62 {
		t.Fatalf("a page far past the end skips %s", strconv.FormatInt(s, 10))
	}
}
