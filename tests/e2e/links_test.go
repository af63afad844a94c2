package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestHealth(t *testing.T) {
	r := do(t, "GET", "/api/health", "", "")
	if r.status != 200 || string(r.body) != `{"status":"ok"}` {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id")
	}
}

func TestShortenRedirectInfo(t *testing.T) {
	ip := newClientIP()
	before := time.Now().UTC().Add(-time.Second)
	code, m := shorten(t, ip, `{"url":"https://93.184.216.34/docs?x=1#top","expiration_days":7,"unknown_field":true}`)
	if !regexp.MustCompile(`^[0-9A-Za-z]{7}$`).MatchString(code) {
		t.Fatalf("code %q is not 7 base62 characters", code)
	}
	if len(m) != 5 || m["short_url"] != baseURL+"/"+code || m["destination_url"] != "https://93.184.216.34/docs?x=1#top" {
		t.Fatalf("body %v", m)
	}
	created := mustTime(t, m["created_at"])
	expires := mustTime(t, m["expires_at"])
	if created.Before(before) || created.After(time.Now().Add(time.Second)) || !expires.Equal(created.AddDate(0, 0, 7)) {
		t.Fatalf("created %s expires %s", created, expires)
	}

	for _, method := range []string{"GET", "HEAD"} {
		r := do(t, method, "/"+code, "", "")
		if r.status != 302 || r.header.Get("Location") != "https://93.184.216.34/docs?x=1#top" || r.header.Get("Cache-Control") != "private, no-store" {
			t.Fatalf("%s redirect: %d %v", method, r.status, r.header)
		}
	}

	r := do(t, "GET", "/api/links/"+code+"/info", "", "")
	info := r.object(t)
	want := []string{"short_code", "short_url", "destination_url", "status", "expired", "auto_renew", "created_at", "expires_at"}
	if r.status != 200 || len(info) != len(want) {
		t.Fatalf("info %d %s", r.status, r.body)
	}
	for _, k := range want {
		if _, ok := info[k]; !ok {
			t.Fatalf("info lacks %s: %s", k, r.body)
		}
	}
	if info["status"] != "ACTIVE" || info["expired"] != false || info["auto_renew"] != false {
		t.Fatalf("info %s", r.body)
	}
	if !mustTime(t, info["created_at"]).Equal(created) || !mustTime(t, info["expires_at"]).Equal(expires) {
		t.Fatalf("info timestamps differ from creation: %s", r.body)
	}

	do(t, "GET", "/api/links/nope123/info", "", "").wantError(t, 404, "short link not found")
	do(t, "GET", "/nope123", "", "").wantError(t, 404, "short link not found")
}

func TestDefaultExpiry(t *testing.T) {
	_, m := shorten(t, newClientIP(), `{"url":"http://example.test/a"}`)
	if !mustTime(t, m["expires_at"]).Equal(mustTime(t, m["created_at"]).AddDate(0, 0, 30)) {
		t.Fatalf("default expiry is not 30 days: %v", m)
	}
}

func mustTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	if !strings.HasSuffix(s, "Z") {
		t.Fatalf("timestamp %q is not UTC with Z", s)
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
