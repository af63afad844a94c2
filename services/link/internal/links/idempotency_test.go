package links

import (
	"context"
	"strings"
	"testing"

	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
	"github.com/linkmesh/linkmesh/pkg/server"
)

func TestIdempotencyKeyReplaysTheFirstCreation(t *testing.T) {
	s, st, _, q := newServiceWithQuota()
	ctx := context.Background()
	req := link.CreateRequest{URL: "https://a.example/x", ExpirationDays: ptr(7), IdempotencyKey: "9f1c-retry-1"}
	first, err := s.Create(ctx, user, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Create(ctx, user, req)
	if err != nil || again.ShortCode != first.ShortCode || again.ID != first.ID || !again.ExpiresAt.Equal(first.ExpiresAt) {
		t.Fatalf("retry answered %+v, %v; want the first link %+v", again, err, first)
	}
	if len(st.links) != 1 || q.taken[user.UserID] != 1 {
		t.Fatalf("%d links stored, %d units taken; want 1 and 1", len(st.links), q.taken[user.UserID])
	}

	other := req
	other.URL = "https://a.example/other"
	_, err = s.Create(ctx, user, other)
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindUnprocessable {
		t.Fatalf("the key with another request: %v, want 422", err)
	}

	// Keys are the caller's: another user's same key makes their own link.
	someone := identity.Caller{UserID: "u-2", Role: identity.RoleUser, Status: "active", QuotaLimit: 100}
	theirs, err := s.Create(ctx, someone, req)
	if err != nil || theirs.ShortCode == first.ShortCode {
		t.Fatalf("another caller's same key answered %+v, %v", theirs, err)
	}
	// Without a key, nothing is replayed.
	plain := req
	plain.IdempotencyKey = ""
	if l, err := s.Create(ctx, user, plain); err != nil || l.ShortCode == first.ShortCode {
		t.Fatalf("a creation without a key answered %+v, %v", l, err)
	}
	for _, bad := range []string{strings.Repeat("k", server.MaxIdempotencyKey+1), "has space", "tab\tkey", "é"} {
		k := req
		k.IdempotencyKey = bad
		if _, err := s.Create(ctx, user, k); !errs.IsKind(err, errs.KindInvalid) {
			t.Errorf("key %q: %v, want 400", bad, err)
		}
	}
}
