package links

import (
	"context"
	"errors"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

// The creation sequence: checks, then one unit of the caller's quota, then the insert, and the
// unit given back when the insert fails, so only successful creations count.
func TestCreateQuotaSequence(t *testing.T) {
	ok := link.CreateRequest{URL: "https://a.example"}
	cases := []struct {
		name          string
		caller        identity.Caller
		req           link.CreateRequest
		limit         int
		storeErr      error
		quotaErr      error
		fails         bool
		wantKind      errs.Kind
		wantMsg       string
		wantReserved  int
		wantReleased  int
		wantRetryHint bool
	}{
		{name: "anonymous takes a unit of its key", caller: anon, req: ok, limit: 10, wantReserved: 1},
		{name: "registered takes a unit of the account", caller: user, req: ok, limit: 10, wantReserved: 1},
		{name: "registered over its own limit", caller: identity.Caller{UserID: "u1", Role: "user", QuotaLimit: 0}, req: ok, limit: 10,
			fails: true, wantKind: errs.KindTooMany, wantMsg: "monthly link quota exceeded", wantReserved: 1, wantRetryHint: true},
		{name: "over the limit", caller: anon, req: ok, limit: 0, fails: true, wantKind: errs.KindTooMany,
			wantMsg: "anonymous link quota exceeded", wantReserved: 1, wantRetryHint: true},
		{name: "bad url gives the unit back", caller: anon, req: link.CreateRequest{URL: "http://internal"}, limit: 10,
			fails: true, wantKind: errs.KindInvalid, wantMsg: "url must not point to a private or internal address",
			wantReserved: 1, wantReleased: 1},
		{name: "over the limit before the lookup", caller: anon, req: link.CreateRequest{URL: "http://internal"}, limit: 0,
			fails: true, wantKind: errs.KindTooMany, wantMsg: "anonymous link quota exceeded", wantReserved: 1, wantRetryHint: true},
		{name: "bad expiry costs nothing", caller: anon, req: link.CreateRequest{URL: "https://a.example", ExpirationDays: ptr(31)}, limit: 10,
			fails: true, wantKind: errs.KindInvalid, wantMsg: "expiration_days must be between 1 and 30"},
		{name: "anonymous custom code costs nothing", caller: anon, req: link.CreateRequest{URL: "https://a.example", CustomCode: ptr("mine")},
			limit: 10, fails: true, wantKind: errs.KindForbidden, wantMsg: "custom_code requires an account"},
		{name: "failed insert gives the unit back", caller: anon, req: ok, limit: 10, storeErr: errors.New("connection reset"),
			fails: true, wantKind: errs.KindInternal, wantReserved: 1, wantReleased: 1},
		{name: "quota service down", caller: anon, req: ok, limit: 10, quotaErr: errs.Unavailable("quota service unavailable", nil),
			fails: true, wantKind: errs.KindUnavailable, wantMsg: "quota service unavailable"},
		{name: "no identity key", caller: identity.Anonymous, req: ok, limit: 10, fails: true, wantKind: errs.KindInternal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, st, _, q := newServiceWithQuota()
			q.limit, q.fail, st.failErr = tc.limit, tc.quotaErr, tc.storeErr
			l, err := s.Create(context.Background(), tc.caller, tc.req)
			if !tc.fails {
				if err != nil || st.links[l.ShortCode].ShortCode != l.ShortCode {
					t.Fatalf("create: %+v %v", l, err)
				}
			} else {
				e, isErr := errs.As(err)
				if err == nil || (isErr && e.Kind != tc.wantKind) || (!isErr && tc.wantKind != errs.KindInternal) ||
					(tc.wantMsg != "" && e.Message != tc.wantMsg) {
					t.Fatalf("got %v, want kind %d %q", err, tc.wantKind, tc.wantMsg)
				}
				if len(st.links) != 0 {
					t.Fatal("a refused link was stored")
				}
				if tc.wantRetryHint && e.RetryAfter.Seconds() != 3600 {
					t.Fatalf("Retry-After = %s, want the quota's 1h", e.RetryAfter)
				}
			}
			if len(q.reserved) != tc.wantReserved || len(q.released) != tc.wantReleased {
				t.Fatalf("reserved %v, released %v; want %d and %d", q.reserved, q.released, tc.wantReserved, tc.wantReleased)
			}
			for _, r := range q.reserved {
				anonymous := r.Scope == quota.ScopeAnonymousCreate && r.Key == anon.IPHash && r.Limit == nil
				account := r.Scope == quota.ScopeUserCreate && r.Key == tc.caller.UserID && r.Limit != nil && *r.Limit == tc.caller.QuotaLimit
				if tc.caller.IsAnonymous() != anonymous || !tc.caller.IsAnonymous() != account {
					t.Fatalf("reserved %+v for %+v, want the caller's own window", r, tc.caller)
				}
			}
			if tc.wantReleased == 1 && q.released[0].ID != "u1" {
				t.Fatalf("released %+v, want the unit taken", q.released[0])
			}
		})
	}
}
