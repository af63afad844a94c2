package e2e

import (
	"context"
	"strconv"
	"testing"

	"github.com/linkmesh/linkmesh/services/auth/authtest"
	"github.com/redis/go-redis/v9"
)

func TestAnonymousQuota(t *testing.T) {
	ip, other := newClientIP(), newClientIP()
	for i := range 10 {
		shorten(t, ip, `{"url":"https://93.184.216.34/q`+itoa(i)+`"}`)
	}
	r := do(t, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/over"}`, ip)
	r.wantError(t, 429, "anonymous link quota exceeded")
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || retry < 86000 || retry > 86400 {
		t.Fatalf("Retry-After %q, want about 24h", r.header.Get("Retry-After"))
	}
	// Another client is unaffected.
	shorten(t, other, `{"url":"https://93.184.216.34/other"}`)

	// A Redis restart loses every key; the durable record still holds the count. (Only the
	// quota keys are dropped: other tests share this Redis.)
	rdb := redisClient(t)
	ctx := context.Background()
	keys, err := rdb.Keys(ctx, "quota:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("no quota keys to drop: %v", err)
	}
	if err := rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	do(t, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/after-flush"}`, ip).
		wantError(t, 429, "anonymous link quota exceeded")
	shorten(t, other, `{"url":"https://93.184.216.34/other-after-flush"}`)
}

func redisClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A signed-in user's creations count against the account's own quota_limit, over 30 days, from
// any address; a changed limit applies to the next creation, and a refused creation costs
// nothing.
func TestRegisteredQuota(t *testing.T) {
	a := register(t)
	two, three := 2, 3
	setUser(t, a.id, authtest.Restriction{QuotaLimit: &two})
	for i := range 2 {
		if r := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/reg`+itoa(i)+`"}`); r.status != 201 {
			t.Fatalf("creation %d: %d %s", i, r.status, r.body)
		}
		if i == 0 { // refused after its unit was taken: the unit is given back
			as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"http://10.0.0.1/refused"}`).
				wantError(t, 400, "url must not point to a private or internal address")
		}
	}
	r := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/over"}`)
	r.wantError(t, 429, "monthly link quota exceeded")
	retry, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || retry < 720*3600-300 || retry > 720*3600 {
		t.Fatalf("Retry-After %q, want about 30 days", r.header.Get("Retry-After"))
	}
	setUser(t, a.id, authtest.Restriction{QuotaLimit: &three})
	if r := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/raised"}`); r.status != 201 {
		t.Fatalf("after raising the limit: %d %s", r.status, r.body)
	}
	as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/over-again"}`).
		wantError(t, 429, "monthly link quota exceeded")
}
