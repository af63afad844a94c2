package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Through the gateway: a user signed in on two devices lists both sessions (the current one
// marked, the User-Agent of each sign-in, never a token), ends the other device's session,
// whose cookie then stops working, and an API token is refused.
func TestSessionsThroughTheGateway(t *testing.T) {
	a := register(t)
	phone := newClientIP()
	r := doWith(t, "POST", "/api/auth/login", `{"email":"`+a.email+`","password":"`+a.password+`"}`,
		map[string]string{"X-Forwarded-For": phone, "User-Agent": "PhoneBrowser/1.0"})
	phoneCookie := sessionCookie(r)
	if r.status != 200 || phoneCookie == "" {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	list := as(t, a.cookie, "GET", "/api/user/sessions", "")
	sessions, _ := list.object(t)["sessions"].([]any)
	if list.status != 200 || len(sessions) != 2 {
		t.Fatalf("sessions: %d %s", list.status, list.body)
	}
	newest, older := sessions[0].(map[string]any), sessions[1].(map[string]any)
	if newest["user_agent"] != "PhoneBrowser/1.0" || newest["current"] != false || older["current"] != true {
		t.Fatalf("sessions: %s", list.body)
	}
	for _, s := range sessions {
		m := s.(map[string]any)
		if len(m) != 5 || m["id"] == "" || m["created_at"] == nil {
			t.Fatalf("a session's fields: %v", m)
		}
	}
	for _, secret := range []string{a.cookie, phoneCookie, phone} {
		if strings.Contains(string(list.body), secret) {
			t.Fatalf("the list shows a token or an address: %s", list.body)
		}
	}
	if r := as(t, a.cookie, "DELETE", "/api/user/sessions/"+newest["id"].(string), ""); r.status != 200 || r.object(t)["status"] != "revoked" {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	as(t, phoneCookie, "GET", "/api/auth/me", "").wantError(t, 401, "session expired or invalid")
	if r := as(t, a.cookie, "GET", "/api/auth/me", ""); r.status != 200 {
		t.Fatalf("the current session after ending the other: %d", r.status)
	}
	as(t, a.cookie, "DELETE", "/api/user/sessions/"+newest["id"].(string), "").wantError(t, 404, "session not found")
	secret, _ := createToken(t, a.cookie, "no-sessions", "links:read")
	withToken(t, secret, "", "GET", "/api/user/sessions", "").wantError(t, 403, "API tokens are not accepted on this route")
}

// Changing the password through the gateway ends every session of the account, on every
// device, and sets a fresh cookie for this one; the new password signs in, the old does not.
func TestPasswordChangeThroughTheGateway(t *testing.T) {
	a := register(t)
	_, other := loginAs(t, a.email, a.password, newClientIP())
	as(t, a.cookie, "POST", "/api/auth/password", `{"current_password":"wrong-one","new_password":"n3w-passphrase"}`).
		wantError(t, 401, "current password is wrong")
	as(t, a.cookie, "POST", "/api/auth/password", `{"current_password":"`+a.password+`","new_password":"short"}`).
		wantError(t, 400, "new_password must be between 8 and 128 characters")
	r := as(t, a.cookie, "POST", "/api/auth/password", `{"current_password":"`+a.password+`","new_password":"n3w-passphrase"}`)
	fresh := sessionCookie(r)
	if r.status != 200 || r.object(t)["status"] != "changed" || fresh == "" || fresh == a.cookie {
		t.Fatalf("change: %d %s (cookie %q)", r.status, r.body, fresh)
	}
	for _, old := range []string{a.cookie, other} {
		as(t, old, "GET", "/api/auth/me", "").wantError(t, 401, "session expired or invalid")
	}
	if r := as(t, fresh, "GET", "/api/auth/me", ""); r.status != 200 {
		t.Fatalf("the fresh session: %d %s", r.status, r.body)
	}
	r, _ = loginAs(t, a.email, a.password, newClientIP())
	r.wantError(t, 401, "invalid email or password")
	if r, cookie := loginAs(t, a.email, "n3w-passphrase", newClientIP()); r.status != 200 || cookie == "" {
		t.Fatalf("the new password: %d %s", r.status, r.body)
	}
	secret, _ := createToken(t, fresh, "no-password", "links:write")
	withToken(t, secret, "", "POST", "/api/auth/password", `{"current_password":"n3w-passphrase","new_password":"another-pass"}`).
		wantError(t, 403, "API tokens are not accepted on this route")
}

// mailTo waits (up to 10 s: the outbox sends at once) for the newest mail to address whose
// subject is subject, and returns its text.
func mailTo(t *testing.T, address, subject string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, m := range mails.Messages() {
			if len(m.To) == 1 && m.To[0] == address && m.Subject == subject {
				return m.Text
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no mail %q to %s", subject, address)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var resetLink = regexp.MustCompile(`/#/reset-password\?token=([A-Za-z0-9_-]+)`)

// The whole reset flow through the gateway and a real SMTP server: the request is answered
// alike for an address with and without an account; the mail carries the link; the link
// sets a new password once, and every session of the account ends.
func TestPasswordResetThroughMail(t *testing.T) {
	a := register(t)
	nobody := "nobody." + dbPrefix + "@example.com"
	for _, email := range []string{a.email, nobody} {
		r := do(t, "POST", "/api/auth/password-reset", `{"email":"`+email+`"}`, newClientIP())
		if r.status != 202 || r.object(t)["status"] != "sent" {
			t.Fatalf("reset request for %s: %d %s", email, r.status, r.body)
		}
	}
	text := mailTo(t, a.email, "Reset your linkmesh password")
	m := resetLink.FindStringSubmatch(text)
	if m == nil || !strings.Contains(text, baseURL+"/#/reset-password?token=") {
		t.Fatalf("no link in the mail: %q", text)
	}
	confirm := func(token, pw string) response {
		return do(t, "POST", "/api/auth/password-reset/confirm", `{"token":"`+token+`","new_password":"`+pw+`"}`, newClientIP())
	}
	confirm("made-up-token", "n3w-passphrase").wantError(t, 400, "reset link is invalid, used or expired")
	if r := confirm(m[1], "n3w-passphrase"); r.status != 200 || r.object(t)["status"] != "changed" {
		t.Fatalf("confirm: %d %s", r.status, r.body)
	}
	as(t, a.cookie, "GET", "/api/auth/me", "").wantError(t, 401, "session expired or invalid")
	if r, cookie := loginAs(t, a.email, "n3w-passphrase", newClientIP()); r.status != 200 || cookie == "" {
		t.Fatalf("the new password: %d %s", r.status, r.body)
	}
	confirm(m[1], "another-passphrase").wantError(t, 400, "reset link is invalid, used or expired")
	for _, msg := range mails.Messages() {
		if msg.To[0] == nobody {
			t.Fatalf("mail to an address without an account: %+v", msg)
		}
	}
}

// Through the gateway and the mail server: a new account cannot create links until its
// owner opens the mailed link; registering its address again answers like a new
// registration without signing in to it; resending works while unverified, then is a 409.
func TestEmailVerificationThroughMail(t *testing.T) {
	accountCounter++
	email := "verify" + itoa(accountCounter) + "." + dbPrefix + "@example.com"
	body := `{"email":"` + email + `","password":"s3cret-passphrase","first_name":"Ada","last_name":"Lovelace"}`
	r := do(t, "POST", "/api/auth/register", body, newClientIP())
	cookie := sessionCookie(r)
	if r.status != 201 || r.object(t)["user"].(map[string]any)["email_verified"] != false || cookie == "" {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	if r := as(t, cookie, "GET", "/api/user/dashboard", ""); r.status != 200 {
		t.Fatalf("an unverified account's dashboard: %d %s", r.status, r.body)
	}
	as(t, cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/unverified"}`).wantError(t, 403, "verify your e-mail address first")
	as(t, cookie, "POST", "/api/links/bulk", `{"links":[{"url":"https://93.184.216.34/unverified"}]}`).wantError(t, 403, "verify your e-mail address first")
	// Nor a credential or a receiver that would outlive the owner's verification.
	as(t, cookie, "POST", "/api/user/tokens", `{"name":"squat","scopes":["links:read"]}`).wantError(t, 403, "verify your e-mail address first")
	as(t, cookie, "POST", "/api/user/webhooks", `{"url":"https://93.184.216.34/squat","events":["link.created"]}`).wantError(t, 403, "verify your e-mail address first")

	// Someone registers the address again: the same kind of answer, but no way in.
	again := do(t, "POST", "/api/auth/register", strings.Replace(body, "s3cret-passphrase", "squatters-pass", 1), newClientIP())
	if again.status != 201 || again.object(t)["user"].(map[string]any)["email"] != email {
		t.Fatalf("registering again: %d %s", again.status, again.body)
	}
	as(t, sessionCookie(again), "GET", "/api/auth/me", "").wantError(t, 401, "session expired or invalid")
	r, _ = loginAs(t, email, "squatters-pass", newClientIP())
	r.wantError(t, 401, "invalid email or password")

	if r := as(t, cookie, "POST", "/api/auth/resend-verification", ""); r.status != 202 {
		t.Fatalf("resend: %d %s", r.status, r.body)
	}
	verifyEmail(t, email)
	// Verifying ended every session, the registrant's too: the owner signs in again.
	as(t, cookie, "GET", "/api/auth/me", "").wantError(t, 401, "session expired or invalid")
	r, cookie = loginAs(t, email, "s3cret-passphrase", newClientIP())
	if r.status != 200 {
		t.Fatalf("sign in after verifying: %d %s", r.status, r.body)
	}
	if r := as(t, cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/verified"}`); r.status != 201 {
		t.Fatalf("shorten once verified: %d %s", r.status, r.body)
	}
	as(t, cookie, "POST", "/api/auth/resend-verification", "").wantError(t, 409, "e-mail address is already verified")
	do(t, "POST", "/api/auth/register", body, newClientIP()).wantError(t, 409, "email is already registered")
}

// The data export through the gateway: the account, each link with its analytics, the
// tokens' and sessions' metadata, field by field; never a secret, a hash or an address.
func TestAccountExport(t *testing.T) {
	a := register(t)
	r := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/export"}`)
	code, _ := r.object(t)["short_code"].(string)
	if r.status != 201 {
		t.Fatalf("shorten: %d %s", r.status, r.body)
	}
	visitor := newClientIP()
	if v := doWith(t, "GET", "/"+code, "", map[string]string{"X-Forwarded-For": visitor, "User-Agent": firefoxLinux}); v.status != 302 {
		t.Fatalf("visit: %d", v.status)
	}
	secret, _ := createToken(t, a.cookie, "exported", "links:read")
	var ex map[string]any
	deadline := time.Now().Add(60 * time.Second)
	for {
		r = as(t, a.cookie, "GET", "/api/user/export", "")
		if r.status != 200 {
			t.Fatalf("export: %d %s", r.status, r.body)
		}
		ex = r.object(t)
		links, _ := ex["links"].([]any)
		if len(links) == 1 && links[0].(map[string]any)["analytics"].(map[string]any)["total_clicks"] == float64(1) || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if cd := r.header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="linkmesh-export-`) {
		t.Fatalf("Content-Disposition %q", cd)
	}
	if len(ex) != 5 || ex["exported_at"] == nil {
		t.Fatalf("export keys: %v", ex)
	}
	account := ex["account"].(map[string]any)
	if account["id"] != a.id || account["email"] != a.email || account["email_verified"] != true || account["first_name"] != "Ada" {
		t.Fatalf("account: %v", account)
	}
	links := ex["links"].([]any)
	l := links[0].(map[string]any)
	link, stats := l["link"].(map[string]any), l["analytics"].(map[string]any)
	if link["short_code"] != code || link["destination_url"] != "https://93.184.216.34/export" || link["click_count"] != float64(1) ||
		stats["short_code"] != code || stats["total_clicks"] != float64(1) || len(stats["timeseries"].([]any)) != 365 {
		t.Fatalf("link %v, analytics %v", link, stats)
	}
	tokens := ex["tokens"].([]any)
	if len(tokens) != 1 || tokens[0].(map[string]any)["name"] != "exported" {
		t.Fatalf("tokens: %v", tokens)
	}
	sessions := ex["sessions"].([]any)
	if len(sessions) != 1 || sessions[0].(map[string]any)["current"] != true {
		t.Fatalf("sessions: %v", sessions)
	}
	for _, leak := range []string{secret, a.cookie, a.password, visitor, "$argon2id", "password_hash"} {
		if strings.Contains(string(r.body), leak) {
			t.Fatalf("the export holds %q", leak)
		}
	}
	withToken(t, secret, "", "GET", "/api/user/export", "").wantError(t, 403, "API tokens are not accepted on this route")
}

// Deleting an account: the password is asked (a wrong one is 401); then the account, its
// sessions, tokens, links (each 404 at once) with their clicks, and its webhooks are gone,
// and a scan of every collection of every service finds nothing of the person: not the
// e-mail, the names, the User-Agent or the links' destinations.
func TestDeleteAccountLeavesNothing(t *testing.T) {
	accountCounter++
	tag := itoa(accountCounter) + dbPrefix[len(dbPrefix)-6:]
	email, first, last := "leaver"+tag+"@example.com", "Firstname"+tag, "Lastname"+tag
	ua, ip := "LeaverBrowser/"+tag, newClientIP()
	headers := map[string]string{"X-Forwarded-For": ip, "User-Agent": ua}
	r := doWith(t, "POST", "/api/auth/register", `{"email":"`+email+`","password":"s3cret-passphrase","first_name":"`+first+`","last_name":"`+last+`"}`, headers)
	if r.status != 201 {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	verifyEmail(t, email)
	// A failed login and a successful one: login records of the address.
	loginAs(t, email, "wrong-password", ip)
	// Verifying ended the registration's session: sign in again.
	if r = doWith(t, "POST", "/api/auth/login", `{"email":"`+email+`","password":"s3cret-passphrase"}`, headers); r.status != 200 {
		t.Fatalf("login: %d %s", r.status, r.body)
	}
	cookie := sessionCookie(r)
	h := map[string]string{"Cookie": "go_session=" + cookie, "X-Forwarded-For": ip, "User-Agent": ua}
	dest := "https://93.184.216.34/leaving-" + tag
	r = doWith(t, "POST", "/api/links/shorten", `{"url":"`+dest+`"}`, h)
	code, _ := r.object(t)["short_code"].(string)
	if r.status != 201 {
		t.Fatalf("shorten: %d %s", r.status, r.body)
	}
	if v := doWith(t, "GET", "/"+code, "", map[string]string{"X-Forwarded-For": newClientIP(), "User-Agent": firefoxLinux}); v.status != 302 {
		t.Fatalf("visit: %d", v.status)
	}
	if r := doWith(t, "POST", "/api/user/links/"+code+"/request-permanent", `{"reason":"keep-`+tag+`"}`, h); r.status != 201 {
		t.Fatalf("request permanent: %d %s", r.status, r.body)
	}
	createToken(t, cookie, "leaving", "links:read")
	if r := doWith(t, "POST", "/api/user/webhooks", `{"url":"https://93.184.216.34/hook-`+tag+`","events":["link.created"]}`, h); r.status != 201 {
		t.Fatalf("webhook: %d %s", r.status, r.body)
	}

	doWith(t, "DELETE", "/api/user/account", `{"password":"wrong-one"}`, h).wantError(t, 401, "password is wrong")
	doWith(t, "DELETE", "/api/user/account", `{}`, h).wantError(t, 400, "password is required")
	r = doWith(t, "DELETE", "/api/user/account", `{"password":"s3cret-passphrase"}`, h)
	if r.status != 200 || r.object(t)["status"] != "deleted" || !strings.Contains(r.header.Get("Set-Cookie"), "go_session=;") {
		t.Fatalf("delete: %d %s %v", r.status, r.body, r.header.Get("Set-Cookie"))
	}
	as(t, cookie, "GET", "/api/auth/me", "").wantError(t, 401, "session expired or invalid")
	eventually(t, code, 404)
	do(t, "GET", "/api/links/"+code+"/info", "", "").wantError(t, 404, "short link not found")
	if err := scanStores(context.Background(), []string{email, first, last, ua, dest, "hook-" + tag, "keep-" + tag}, false); err != nil {
		t.Fatal(err)
	}
}
