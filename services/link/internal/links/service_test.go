package links

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/clients/analytics"
	"github.com/linkmesh/linkmesh/pkg/clients/link"
	"github.com/linkmesh/linkmesh/pkg/clients/quota"
	"github.com/linkmesh/linkmesh/pkg/errs"
	"github.com/linkmesh/linkmesh/pkg/identity"
)

type fakeStore struct {
	links   map[string]Link
	failErr error
}

func (s *fakeStore) Insert(_ context.Context, l Link) error {
	if s.failErr != nil {
		return s.failErr
	}
	if _, ok := s.links[l.ShortCode]; ok {
		return ErrCodeTaken
	}
	for _, other := range s.links {
		if other.ID == l.ID {
			return ErrCodeTaken // a duplicate key, as the unique _id answers
		}
	}
	s.links[l.ShortCode] = l
	return nil
}

func (s *fakeStore) InsertEach(ctx context.Context, ls []Link) ([]error, error) {
	if s.failErr != nil {
		return nil, s.failErr
	}
	out := make([]error, len(ls))
	for i, l := range ls {
		out[i] = s.Insert(ctx, l)
	}
	return out, nil
}

func (s *fakeStore) FindByCode(_ context.Context, code string) (Link, error) {
	if s.failErr != nil {
		return Link{}, s.failErr
	}
	l, ok := s.links[code]
	if !ok {
		return Link{}, ErrNotFound
	}
	return l, nil
}

func (s *fakeStore) FindByID(_ context.Context, id string) (Link, error) {
	for _, l := range s.links {
		if l.ID == id {
			return l, nil
		}
	}
	return Link{}, ErrNotFound
}

func (s *fakeStore) List(_ context.Context, q ListQuery) ([]Link, int64, error) {
	var out []Link
	for _, l := range s.links {
		if l.OwnerID == q.OwnerID && l.DeletedAt == nil {
			out = append(out, l)
		}
	}
	// Newest first, as the store lists.
	slices.SortFunc(out, func(a, b Link) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, int64(len(out)), s.failErr
}

func (s *fakeStore) UpdateLive(_ context.Context, code, owner string, ch Change) (bool, error) {
	l, ok := s.links[code]
	if s.failErr != nil || !ok || l.OwnerID != owner || l.DeletedAt != nil || (ch.IfStatus != "" && l.Status != ch.IfStatus) {
		return false, s.failErr
	}
	if ch.ExpiresAt != nil {
		l.ExpiresAt = *ch.ExpiresAt
	}
	if ch.DeletedAt != nil {
		l.DeletedAt = ch.DeletedAt
	}
	s.links[code] = l
	return true, nil
}

func (s *fakeStore) Update(_ context.Context, code string, ch Change) error {
	l, ok := s.links[code]
	if !ok || ch.IfID != "" && l.ID != ch.IfID {
		return ErrNotFound
	}
	if ch.AutoRenew != nil {
		l.AutoRenew = *ch.AutoRenew
	}
	s.links[code] = l
	return s.failErr
}

func (s *fakeStore) Overview(ctx context.Context, q ListQuery, n int64) (Overview, error) {
	all, total, err := s.List(ctx, q)
	o := Overview{Total: total, Newest: all[:min(int64(len(all)), n)]}
	for _, l := range all {
		switch l.State(q.Now) {
		case StateDisabled:
			o.Disabled++
		case StateExpired:
			o.Expired++
		}
	}
	return o, err
}

// fakeClicks answers click totals from a table of clicks per link and owner.
type fakeClicks struct {
	links  map[string]int64
	owners map[string]int64
	fail   error
}

func (f *fakeClicks) Counts(_ context.Context, req analytics.CountsRequest) (analytics.Counts, error) {
	out := analytics.Counts{Links: map[string]int64{}, Owner: f.owners[req.OwnerID]}
	for _, id := range req.LinkIDs {
		out.Links[id] = f.links[id]
	}
	return out, f.fail
}

func (f *fakeClicks) Link(_ context.Context, linkID, code string, days int) (analytics.LinkAnalytics, error) {
	return analytics.LinkAnalytics{ShortCode: code, TotalClicks: f.links[linkID], From: fmt.Sprint(days)}, f.fail
}

type fakeCache struct {
	entries     map[string]*link.Resolved // nil value = cached absence
	invalidated []string
}

func (c *fakeCache) Get(_ context.Context, code string) (link.Resolved, bool, bool, string) {
	r, ok := c.entries[code]
	if !ok {
		return link.Resolved{}, false, false, ""
	}
	if r == nil {
		return link.Resolved{}, false, true, ""
	}
	return *r, true, true, ""
}

func (c *fakeCache) Put(_ context.Context, code, _ string, r link.Resolved, found bool) {
	if found {
		c.entries[code] = &r
	} else {
		c.entries[code] = nil
	}
}

func (c *fakeCache) Invalidate(_ context.Context, code string) {
	delete(c.entries, code)
	c.invalidated = append(c.invalidated, code)
}

func (c *fakeCache) Created(ctx context.Context, code string) { c.Invalidate(ctx, code) }

type fakeChecker struct{}

func (fakeChecker) Check(_ context.Context, raw string) error {
	if strings.Contains(raw, "internal") {
		return errors.New("url must not point to a private or internal address")
	}
	return nil
}

var (
	now  = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	user = identity.Caller{UserID: "u1", Role: "user", Status: "active", QuotaLimit: 100}
	anon = identity.Caller{Role: identity.RoleAnonymous, IPHash: "client-key-1"}
)

// fakeQuota grants limit units per key; released units free room again.
type fakeQuota struct {
	limit    int
	taken    map[string]int
	reserved []quota.ReserveRequest
	released []quota.ReleaseRequest
	fail     error
}

func (q *fakeQuota) Reserve(_ context.Context, req quota.ReserveRequest) (quota.Reservation, error) {
	if q.fail != nil {
		return quota.Reservation{}, q.fail
	}
	q.reserved = append(q.reserved, req)
	limit := q.limit
	if req.Limit != nil {
		limit = min(limit, *req.Limit)
	}
	if q.taken[req.Key] >= limit {
		return quota.Reservation{Allowed: false, RetryAfterSeconds: 3600}, nil
	}
	q.taken[req.Key]++
	return quota.Reservation{Allowed: true, ID: fmt.Sprintf("u%d", len(q.reserved))}, nil
}

func (q *fakeQuota) Usage(_ context.Context, req quota.ReserveRequest) (quota.Reservation, error) {
	return quota.Reservation{Limit: *req.Limit, Used: q.taken[req.Key], Remaining: *req.Limit - q.taken[req.Key], WindowSeconds: 30 * 86400}, q.fail
}

func (q *fakeQuota) Release(_ context.Context, req quota.ReleaseRequest) error {
	q.released = append(q.released, req)
	q.taken[req.Key]--
	return nil
}

func newService() (*Service, *fakeStore, *fakeCache) {
	s, st, c, _ := newServiceWithQuota()
	return s, st, c
}

func newServiceWithQuota() (*Service, *fakeStore, *fakeCache, *fakeQuota) {
	st := &fakeStore{links: map[string]Link{}}
	c := &fakeCache{entries: map[string]*link.Resolved{}}
	q := &fakeQuota{limit: 1000, taken: map[string]int{}}
	s := NewService(Options{Store: st, Cache: c, URLs: fakeChecker{}, Quota: q, BaseURL: "https://sho.rt/", Clicks: &fakeClicks{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	s.now = func() time.Time { return now }
	return s, st, c, q
}

func ptr[T any](v T) *T { return &v }

func TestCreateRules(t *testing.T) {
	cases := []struct {
		name    string
		caller  identity.Caller
		req     link.CreateRequest
		kind    errs.Kind
		msg     string
		expires time.Time
	}{
		{"default expiry", anon, link.CreateRequest{URL: "https://a.example"}, 0, "", now.AddDate(0, 0, 30)},
		{"anonymous 1 day", anon, link.CreateRequest{URL: "https://a.example", ExpirationDays: ptr(1)}, 0, "", now.AddDate(0, 0, 1)},
		{"anonymous 30 days", anon, link.CreateRequest{URL: "https://a.example", ExpirationDays: ptr(30)}, 0, "", now.AddDate(0, 0, 30)},
		{"anonymous 31 days", anon, link.CreateRequest{URL: "https://a.example", ExpirationDays: ptr(31)}, errs.KindInvalid, "expiration_days must be between 1 and 30", time.Time{}},
		{"zero days", anon, link.CreateRequest{URL: "https://a.example", ExpirationDays: ptr(0)}, errs.KindInvalid, "expiration_days must be between 1 and 30", time.Time{}},
		{"negative days", user, link.CreateRequest{URL: "https://a.example", ExpirationDays: ptr(-5)}, errs.KindInvalid, "expiration_days must be between 1 and 365", time.Time{}},
		{"registered 365 days", user, link.CreateRequest{URL: "https://a.example", ExpirationDays: ptr(365)}, 0, "", now.AddDate(0, 0, 365)},
		{"registered 366 days", user, link.CreateRequest{URL: "https://a.example", ExpirationDays: ptr(366)}, errs.KindInvalid, "expiration_days must be between 1 and 365", time.Time{}},
		{"bad destination", anon, link.CreateRequest{URL: "http://internal"}, errs.KindInvalid, "url must not point to a private or internal address", time.Time{}},
		{"anonymous custom code", anon, link.CreateRequest{URL: "https://a.example", CustomCode: ptr("mine")}, errs.KindForbidden, "custom_code requires an account", time.Time{}},
		{"custom too short", user, link.CreateRequest{URL: "https://a.example", CustomCode: ptr("ab")}, errs.KindInvalid, "custom_code must be 3-32 characters of A-Z, a-z, 0-9, _ and -", time.Time{}},
		{"custom too long", user, link.CreateRequest{URL: "https://a.example", CustomCode: ptr(strings.Repeat("a", 33))}, errs.KindInvalid, "custom_code must be 3-32 characters of A-Z, a-z, 0-9, _ and -", time.Time{}},
		{"custom bad chars", user, link.CreateRequest{URL: "https://a.example", CustomCode: ptr("a/b.c")}, errs.KindInvalid, "custom_code must be 3-32 characters of A-Z, a-z, 0-9, _ and -", time.Time{}},
		{"custom reserved", user, link.CreateRequest{URL: "https://a.example", CustomCode: ptr("API")}, errs.KindInvalid, "custom_code is a reserved word", time.Time{}},
		{"custom ok", user, link.CreateRequest{URL: "https://a.example", CustomCode: ptr("my-Code_1")}, 0, "", now.AddDate(0, 0, 30)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, st, c := newService()
			l, err := s.Create(context.Background(), tc.caller, tc.req)
			if tc.msg != "" {
				e, ok := errs.As(err)
				if !ok || e.Kind != tc.kind || e.Message != tc.msg {
					t.Fatalf("got %v, want kind %d %q", err, tc.kind, tc.msg)
				}
				if len(st.links) != 0 {
					t.Fatal("a refused link was stored")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !l.ExpiresAt.Equal(tc.expires) || !l.CreatedAt.Equal(now) || l.Status != link.StatusActive || l.OwnerID != tc.caller.UserID {
				t.Fatalf("unexpected link %+v", l)
			}
			if tc.req.CustomCode != nil && l.ShortCode != *tc.req.CustomCode {
				t.Fatalf("custom code not kept: %q", l.ShortCode)
			}
			if _, ok := st.links[l.ShortCode]; !ok {
				t.Fatal("link not stored")
			}
			if len(c.invalidated) != 1 || c.invalidated[0] != l.ShortCode {
				t.Fatalf("creation must invalidate cached absence of the code, got %v", c.invalidated)
			}
		})
	}
}

func TestCreateRetriesCollisions(t *testing.T) {
	s, st, _ := newService()
	st.links["taken01"] = Link{ShortCode: "taken01"}
	codes := []string{"taken01", "taken01", "fresh01"}
	s.newCode = func() (string, error) { c := codes[0]; codes = codes[1:]; return c, nil }
	l, err := s.Create(context.Background(), anon, link.CreateRequest{URL: "https://a.example"})
	if err != nil || l.ShortCode != "fresh01" {
		t.Fatalf("got %+v %v", l, err)
	}

	s.newCode = func() (string, error) { return "taken01", nil }
	if _, err := s.Create(context.Background(), anon, link.CreateRequest{URL: "https://a.example"}); err == nil {
		t.Fatal("endless collisions must fail")
	}
}

func TestCustomCodeTaken(t *testing.T) {
	s, st, _ := newService()
	st.links["mine"] = Link{ShortCode: "mine"}
	_, err := s.Create(context.Background(), user, link.CreateRequest{URL: "https://a.example", CustomCode: ptr("mine")})
	if e, ok := errs.As(err); !ok || e.Kind != errs.KindConflict {
		t.Fatalf("got %v, want 409", err)
	}
}

func TestNewCode(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		c, err := NewCode()
		if err != nil || len(c) != GeneratedCodeLength || !link.PlausibleCode(c) || strings.ContainsAny(c, "_-") {
			t.Fatalf("bad code %q %v", c, err)
		}
		if seen[c] {
			t.Fatalf("duplicate code %q in 1000 draws", c)
		}
		seen[c] = true
	}
}

func TestResolveAndInfo(t *testing.T) {
	s, st, c := newService()
	deleted := now.Add(-time.Hour)
	st.links["live"] = Link{ShortCode: "live", DestinationURL: "https://a.example", Status: link.StatusActive, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	st.links["old"] = Link{ShortCode: "old", DestinationURL: "https://b.example", Status: link.StatusActive, ExpiresAt: now.Add(-time.Second)}
	st.links["gone"] = Link{ShortCode: "gone", DestinationURL: "https://c.example", Status: link.StatusActive, ExpiresAt: now.Add(time.Hour), DeletedAt: &deleted}
	ctx := context.Background()

	r, err := s.Resolve(ctx, "live")
	if err != nil || r.DestinationURL != "https://a.example" || c.entries["live"] == nil {
		t.Fatalf("resolve live: %+v %v (cached %v)", r, err, c.entries["live"])
	}
	delete(st.links, "live") // now only the cache knows it
	if r, err := s.Resolve(ctx, "live"); err != nil || r.DestinationURL != "https://a.example" {
		t.Fatalf("cache not used: %v", err)
	}
	for _, code := range []string{"gone", "nope", "bad/code", strings.Repeat("x", 40)} {
		if _, err := s.Resolve(ctx, code); !errs.IsKind(err, errs.KindNotFound) {
			t.Errorf("resolve %q: got %v, want 404", code, err)
		}
		if _, err := s.Info(ctx, code); !errs.IsKind(err, errs.KindNotFound) {
			t.Errorf("info %q: got %v, want 404", code, err)
		}
	}
	if v, ok := c.entries["nope"]; !ok || v != nil {
		t.Error("unknown code not negatively cached")
	}
	info, err := s.Info(ctx, "old")
	if err != nil || !info.Expired || info.ShortURL != "https://sho.rt/old" || info.DestinationURL != "https://b.example" {
		t.Fatalf("info old: %+v %v", info, err)
	}
	// What moderation took down is not served by info either.
	st.links["phish"] = Link{ShortCode: "phish", DestinationURL: "https://evil.example", Status: link.StatusDisabled, ExpiresAt: now.Add(time.Hour)}
	if info, err := s.Info(ctx, "phish"); err != nil || info.DestinationURL != "" || info.Status != link.StatusDisabled {
		t.Fatalf("info of a disabled link: %+v %v", info, err)
	}
	st.failErr = fmt.Errorf("connection reset")
	// A store failure passes up as it is: the boot path's classifier decides whether it is
	// an outage (503) or a fault (500).
	if _, err := s.Info(ctx, "old"); !errors.Is(err, st.failErr) || errs.IsKind(err, errs.KindNotFound) {
		t.Fatalf("store failure: got %v, want the store's error", err)
	}
}

func (s *fakeStore) OutboxDue(context.Context, time.Time, time.Time, int64) ([]Link, error) {
	return nil, nil
}

func (s *fakeStore) FindByIDs(context.Context, []string) ([]Link, error) { return nil, nil }

func (s *fakeStore) ClearOutboxes(context.Context, map[string][]string) error { return nil }

func (s *fakeStore) ExpiriesDue(context.Context, time.Time, int64) ([]Link, error) { return nil, nil }

func (s *fakeStore) MarkExpired(context.Context, string, time.Time) (bool, error) { return false, nil }

func (s *fakeStore) ExistingIDs(_ context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, l := range s.links {
		for _, id := range ids {
			if l.ID == id {
				out[id] = true
			}
		}
	}
	return out, nil
}
