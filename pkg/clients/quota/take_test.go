package quota

import (
	"context"
	"errors"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/errs"
)

type reserverFunc func() (Reservation, error)

func (f reserverFunc) Reserve(context.Context, ReserveRequest) (Reservation, error) { return f() }

func TestTake(t *testing.T) {
	cases := []struct {
		name    string
		answer  func() (Reservation, error)
		kind    errs.Kind
		msg     string
		release ReleaseRequest
	}{
		{"granted", func() (Reservation, error) { return Reservation{Allowed: true, ID: "u1"}, nil }, 0, "",
			ReleaseRequest{Scope: ScopeAnonymousCreate, Key: "k", ID: "u1"}},
		{"denied", func() (Reservation, error) { return Reservation{RetryAfterSeconds: 90}, nil }, errs.KindTooMany, "nope", ReleaseRequest{}},
		{"quota down", func() (Reservation, error) { return Reservation{}, errs.Unavailable("quota service unavailable", nil) },
			errs.KindUnavailable, "quota service unavailable", ReleaseRequest{}},
		{"quota complains", func() (Reservation, error) { return Reservation{}, errs.Invalid(`scope "x" is unknown`) },
			errs.KindUnavailable, "quota service unavailable", ReleaseRequest{}},
		{"plain failure", func() (Reservation, error) { return Reservation{}, errors.New("boom") },
			errs.KindUnavailable, "quota service unavailable", ReleaseRequest{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rel, err := Take(context.Background(), reserverFunc(tc.answer), ReserveRequest{Scope: ScopeAnonymousCreate, Key: "k"}, "nope")
			if tc.msg == "" {
				if err != nil || rel != tc.release {
					t.Fatalf("got %+v %v", rel, err)
				}
				return
			}
			e, ok := errs.As(err)
			if !ok || e.Kind != tc.kind || e.Message != tc.msg || rel != (ReleaseRequest{}) {
				t.Fatalf("got %+v %v, want kind %d %q", rel, err, tc.kind, tc.msg)
			}
			if tc.kind == errs.KindTooMany && e.RetryAfter.Seconds() != 90 {
				t.Fatalf("Retry-After %s", e.RetryAfter)
			}
		})
	}
}
