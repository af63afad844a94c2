package e2e

import (
	"context"
	"strconv"
	"testing"

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

func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
