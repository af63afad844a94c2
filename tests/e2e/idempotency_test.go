package e2e

import (
	"sync"
	"testing"
)

// Ten concurrent creations with one Idempotency-Key make one link: every answer is its 201,
// one unit of quota is taken, and the key with another body is refused with 422.
func TestIdempotencyKeyOnShorten(t *testing.T) {
	ip := newClientIP()
	body := `{"url":"https://93.184.216.34/idempotent","expiration_days":3}`
	headers := map[string]string{"X-Forwarded-For": ip, "Idempotency-Key": "c0ffee-" + dbPrefix}
	var wg sync.WaitGroup
	answers := make([]response, 10)
	for i := range answers {
		wg.Go(func() { answers[i] = doWith(t, "POST", "/api/links/shorten", body, headers) })
	}
	wg.Wait()
	code := ""
	for i, r := range answers {
		if r.status != 201 {
			t.Fatalf("attempt %d: %d %s", i, r.status, r.body)
		}
		c, _ := r.object(t)["short_code"].(string)
		if code == "" {
			code = c
		}
		if c != code {
			t.Fatalf("attempt %d created %s, another %s", i, c, code)
		}
	}
	doWith(t, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/something-else"}`, headers).
		wantError(t, 422, "Idempotency-Key was already used with a different request")
	// One unit taken: nine more creations fit in the anonymous quota of ten.
	for i := range 9 {
		if r := do(t, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/n`+itoa(i)+`"}`, ip); r.status != 201 {
			t.Fatalf("creation %d after the keyed one: %d %s", i+2, r.status, r.body)
		}
	}
	do(t, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/eleventh"}`, ip).wantError(t, 429, "anonymous link quota exceeded")
	doWith(t, "POST", "/api/links/shorten", body, map[string]string{"X-Forwarded-For": newClientIP(), "Idempotency-Key": "bad key"}).
		wantError(t, 400, "Idempotency-Key must be visible ASCII characters")
}

// A registration retried with its Idempotency-Key — sequentially, as after a 503, and
// concurrently — signs in to the one account the first attempt created; the key with
// another body is 422 and a retry without the key is the usual 409.
func TestIdempotencyKeyOnRegister(t *testing.T) {
	email := "idem." + dbPrefix + "@example.com"
	body := `{"email":"` + email + `","password":"s3cret-passphrase","first_name":"Ada","last_name":"Lovelace"}`
	headers := map[string]string{"X-Forwarded-For": newClientIP(), "Idempotency-Key": "register-" + dbPrefix}
	var wg sync.WaitGroup
	answers := make([]response, 5)
	for i := range answers {
		wg.Go(func() { answers[i] = doWith(t, "POST", "/api/auth/register", body, headers) })
	}
	wg.Wait()
	answers = append(answers, doWith(t, "POST", "/api/auth/register", body, headers))
	id := ""
	for i, r := range answers {
		if r.status != 201 || sessionCookie(r) == "" {
			t.Fatalf("attempt %d: %d %s", i, r.status, r.body)
		}
		u, _ := r.object(t)["user"].(map[string]any)
		if id == "" {
			id, _ = u["id"].(string)
		}
		if u["id"] != id {
			t.Fatalf("attempt %d answered account %v, another %s", i, u["id"], id)
		}
	}
	wrongPassword := `{"email":"` + email + `","password":"another-passphrase","first_name":"Ada","last_name":"Lovelace"}`
	doWith(t, "POST", "/api/auth/register", wrongPassword, headers).
		wantError(t, 422, "Idempotency-Key was already used with a different request")
	// Without the key: an unverified address answers like a new registration, a verified
	// one is the usual 409.
	if r := do(t, "POST", "/api/auth/register", body, newClientIP()); r.status != 201 {
		t.Fatalf("registering the unverified address again: %d %s", r.status, r.body)
	}
	verifyEmail(t, email)
	do(t, "POST", "/api/auth/register", body, newClientIP()).wantError(t, 409, "email is already registered")
}
