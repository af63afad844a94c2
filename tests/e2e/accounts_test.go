package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/services/auth/authtest"
)

func TestRegisterLoginMeLogout(t *testing.T) {
	a := register(t)
	r := as(t, a.cookie, "GET", "/api/auth/me", "")
	u, _ := r.object(t)["user"].(map[string]any)
	if r.status != 200 || u["email"] != a.email || u["role"] != "user" || u["status"] != "active" ||
		u["auth_provider"] != "email" || u["quota_limit"] != float64(100) {
		t.Fatalf("me: %d %s", r.status, r.body)
	}
	for _, k := range []string{"created_at", "updated_at", "last_login_at"} {
		if u[k] != a.registered[k] {
			t.Fatalf("%s: registration said %v, me says %v", k, a.registered[k], u[k])
		}
		mustTime(t, u[k])
	}
	for _, secret := range []string{"password", "hash", "token", "idp_uid"} {
		if strings.Contains(string(r.body), secret) {
			t.Fatalf("user JSON exposes %q: %s", secret, r.body)
		}
	}

	// Login is case-insensitive on the e-mail and always issues a fresh token.
	r, cookie := loginAs(t, strings.ToUpper(a.email), a.password, newClientIP())
	if r.status != 200 || cookie == "" || cookie == a.cookie {
		t.Fatalf("login: %d cookie %q", r.status, cookie)
	}
	set := r.header.Get("Set-Cookie")
	mustContainAll(t, set, "Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=")
	if age, _ := strconv.Atoi(regexp.MustCompile(`Max-Age=(\d+)`).FindStringSubmatch(set)[1]); age < 7*86400-60 || age > 7*86400 {
		t.Fatalf("cookie Max-Age %d, want 7 days", age)
	}
	if len(cookie) < 22 {
		t.Fatalf("session token %q is shorter than 128 bits", cookie)
	}

	r = as(t, cookie, "POST", "/api/auth/logout", "")
	if r.status != 200 || string(r.body) != `{"status":"logged_out"}` || !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("logout: %d %s %v", r.status, r.body, r.header)
	}
	as(t, cookie, "GET", "/api/auth/me", "").wantError(t, 401, "session expired or invalid")
	if r := as(t, "", "POST", "/api/auth/logout", ""); r.status != 200 {
		t.Fatalf("logout without a session must succeed: %d", r.status)
	}
	// The other session is untouched.
	if r := as(t, a.cookie, "GET", "/api/auth/me", ""); r.status != 200 {
		t.Fatalf("unrelated session revoked: %d", r.status)
	}
}

func TestRegisterRefusals(t *testing.T) {
	a := register(t)
	ip := newClientIP()
	cases := []struct {
		name, body string
		status     int
	}{
		{"taken, other case", `{"email":"` + strings.ToUpper(a.email) + `","password":"another-pass","first_name":"A","last_name":"B"}`, 409},
		{"bad email", `{"email":"not-an-email","password":"long-enough","first_name":"A","last_name":"B"}`, 400},
		{"short password", `{"email":"x1@example.com","password":"short","first_name":"A","last_name":"B"}`, 400},
		{"long password", `{"email":"x2@example.com","password":"` + strings.Repeat("p", 129) + `","first_name":"A","last_name":"B"}`, 400},
		{"empty first name", `{"email":"x3@example.com","password":"long-enough","first_name":"  ","last_name":"B"}`, 400},
		{"missing last name", `{"email":"x4@example.com","password":"long-enough","first_name":"A"}`, 400},
		{"wrong type", `{"email":"x5@example.com","password":12345678,"first_name":"A","last_name":"B"}`, 400},
		{"not json", `{"email":`, 400},
	}
	for _, tc := range cases {
		r := do(t, "POST", "/api/auth/register", tc.body, ip)
		if r.status != tc.status {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
		if msg, _ := r.object(t)["error"].(string); msg == "" || sessionCookie(r) != "" {
			t.Errorf("%s: no error message or a cookie was set: %s", tc.name, r.body)
		}
	}
}

func TestLoginFailuresLookAlikeAndAreLimited(t *testing.T) {
	a := register(t)
	ip := newClientIP()
	wrong, _ := loginAs(t, a.email, "wrong-password", ip)
	unknown, _ := loginAs(t, "nobody."+dbPrefix+"@example.com", "wrong-password", ip)
	wrong.wantError(t, 401, "invalid email or password")
	unknown.wantError(t, 401, "invalid email or password")

	// Per e-mail: the ceiling counts failures from any address.
	for i := 0; i < loginFailuresPerEmail-1; i++ {
		loginAs(t, a.email, "wrong-password", newClientIP())
	}
	r, _ := loginAs(t, a.email, a.password, newClientIP())
	r.wantError(t, 429, "too many failed login attempts")
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}

	// Successes do not count: a fresh account logs in many times from one address.
	b := register(t)
	ip2 := newClientIP()
	for i := 0; i < loginFailures+2; i++ {
		if r, _ := loginAs(t, b.email, b.password, ip2); r.status != 200 {
			t.Fatalf("login %d: %d %s", i, r.status, r.body)
		}
	}
}

func TestBanAndSuspensionTakeEffectAtOnce(t *testing.T) {
	a := register(t)
	if r := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/mine"}`); r.status != 201 {
		t.Fatalf("signed-in create: %d %s", r.status, r.body)
	}
	setUser(t, a.id, authtest.Restriction{Status: "banned", BanReason: ptr("spam")})
	as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/mine2"}`).wantError(t, 403, "account is banned")
	as(t, a.cookie, "GET", "/api/user/dashboard", "").wantError(t, 403, "account is banned")
	if r := as(t, a.cookie, "GET", "/api/auth/me", ""); r.status != 200 || r.object(t)["user"].(map[string]any)["status"] != "banned" {
		t.Fatalf("me of a banned user: %d %s", r.status, r.body)
	}
	r, _ := loginAs(t, a.email, a.password, newClientIP())
	r.wantError(t, 403, "account is banned")

	b := register(t)
	until := time.Now().Add(4 * time.Second).UTC()
	setUser(t, b.id, authtest.Restriction{TimeoutUntil: &until})
	if r := as(t, b.cookie, "GET", "/api/user/dashboard", ""); r.status != 403 {
		t.Fatalf("suspended: %d %s", r.status, r.body)
	}
	if r, _ := loginAs(t, b.email, b.password, newClientIP()); r.status != 403 {
		t.Fatalf("suspended login: %d %s", r.status, r.body)
	}
	time.Sleep(time.Until(until) + 200*time.Millisecond)
	if r := as(t, b.cookie, "GET", "/api/auth/me", ""); r.object(t)["user"].(map[string]any)["status"] != "active" {
		t.Fatalf("suspension must end by itself: %s", r.body)
	}
	if r := as(t, b.cookie, "GET", "/api/user/dashboard", ""); r.status != 200 {
		t.Fatalf("after the timeout: %d %s", r.status, r.body)
	}
}

func TestSignedInCreation(t *testing.T) {
	a := register(t)
	// Registered users may choose codes and a year of expiry, and the anonymous quota
	// does not apply to them.
	code := "e2e-" + strconv.Itoa(accountCounter) + "-" + dbPrefix[len(dbPrefix)-6:]
	r := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/own","expiration_days":365,"custom_code":"`+code+`"}`)
	if r.status != 201 || r.object(t)["short_code"] != code {
		t.Fatalf("custom code: %d %s", r.status, r.body)
	}
	as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/x","custom_code":"`+code+`"}`).
		wantError(t, 409, "custom_code is already taken")
	as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/x","expiration_days":366}`).
		wantError(t, 400, "expiration_days must be between 1 and 365")
	for i := 0; i < 12; i++ {
		if r := as(t, a.cookie, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/n`+itoa(i)+`"}`); r.status != 201 {
			t.Fatalf("creation %d: %d %s", i, r.status, r.body)
		}
	}
	as(t, "forged-token", "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/x"}`).
		wantError(t, 401, "session expired or invalid")
}

func TestCrossSiteWritesWithCookieAreRefused(t *testing.T) {
	a := register(t)
	h := map[string]string{"Cookie": "go_session=" + a.cookie, "Origin": "https://evil.example"}
	doWith(t, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/csrf"}`, h).wantError(t, 403, "cross-site request refused")
	h = map[string]string{"Cookie": "go_session=" + a.cookie, "Sec-Fetch-Site": "cross-site"}
	doWith(t, "POST", "/api/auth/logout", "", h).wantError(t, 403, "cross-site request refused")
	h = map[string]string{"Cookie": "go_session=" + a.cookie, "Origin": baseURL, "Sec-Fetch-Site": "same-origin"}
	if r := doWith(t, "POST", "/api/links/shorten", `{"url":"https://93.184.216.34/ok"}`, h); r.status != 201 {
		t.Fatalf("same-origin write: %d %s", r.status, r.body)
	}
}

func TestRolesAndLoginRecords(t *testing.T) {
	root := admin(t)
	a := register(t)
	as(t, a.cookie, "POST", "/api/admin/users/"+a.id+"/role", `{"role":"super_admin"}`).wantError(t, 403, "super_admin role required")
	r := as(t, root, "POST", "/api/admin/users/"+a.id+"/role", `{"role":"moderator"}`)
	if r.status != 200 || r.object(t)["user"].(map[string]any)["role"] != "moderator" {
		t.Fatalf("promote: %d %s", r.status, r.body)
	}
	// The new role counts on the very next request of the promoted user.
	if r := as(t, a.cookie, "GET", "/api/admin/overview", ""); r.status != 200 {
		t.Fatalf("moderator on a moderator route: %d %s", r.status, r.body)
	}
	if r := as(t, root, "POST", "/api/admin/users/"+a.id+"/role", `{"role":"emperor"}`); r.status != 400 {
		t.Fatalf("invalid role: %d %s", r.status, r.body)
	}
	if r := as(t, root, "POST", "/api/admin/users/does-not-exist/role", `{"role":"user"}`); r.status != 404 {
		t.Fatalf("unknown user: %d %s", r.status, r.body)
	}

	r = as(t, root, "GET", "/api/admin/login-records?email="+a.email+"&page_size=50", "")
	if r.status != 200 {
		t.Fatalf("login records: %d %s", r.status, r.body)
	}
	recs, _ := r.object(t)["records"].([]any)
	if len(recs) == 0 {
		t.Fatalf("no login records for %s: %s", a.email, r.body)
	}
	for _, rec := range recs {
		m := rec.(map[string]any)
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(m["ip_hash"].(string)) {
			t.Fatalf("ip_hash %v", m["ip_hash"])
		}
	}
	if strings.Contains(string(r.body), "198.18.") {
		t.Fatalf("a raw IP reached the login records: %s", r.body)
	}
	if r := as(t, root, "GET", "/api/admin/login-records?page_size=101", ""); r.status != 400 {
		t.Fatalf("page_size above 100: %d", r.status)
	}
}

func TestIdentityProviderLogin(t *testing.T) {
	r := do(t, "GET", "/api/auth/idp-config", "", "")
	cfg := r.object(t)
	if r.status != 200 || cfg["enabled"] != true || cfg["client_id"] != oidcClientID || cfg["provider"] != "google" {
		t.Fatalf("idp-config: %d %s", r.status, r.body)
	}
	email := "grace." + dbPrefix + "@example.com"
	r = do(t, "POST", "/api/auth/google", `{"id_token":"`+issuer.Token("sub-"+dbPrefix, email, nil)+`"}`, newClientIP())
	u, _ := r.object(t)["user"].(map[string]any)
	if r.status != 200 || u["auth_provider"] != "google" || u["email"] != email || sessionCookie(r) == "" {
		t.Fatalf("google login: %d %s", r.status, r.body)
	}
	for name, override := range map[string]map[string]any{
		"wrong audience":     {"aud": "someone-else"},
		"wrong issuer":       {"iss": "https://accounts.google.com"},
		"expired":            {"exp": time.Now().Add(-time.Hour).Unix(), "iat": time.Now().Add(-2 * time.Hour).Unix()},
		"unverified e-mail":  {"email_verified": false},
		"no e-mail verified": {"email_verified": nil},
	} {
		r := do(t, "POST", "/api/auth/google", `{"id_token":"`+issuer.Token("sub-x", "x@example.com", override)+`"}`, newClientIP())
		if r.status != 401 || sessionCookie(r) != "" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	if r := do(t, "POST", "/api/auth/google", `{"id_token":"not.a.jwt"}`, newClientIP()); r.status != 401 {
		t.Errorf("garbage token: %d %s", r.status, r.body)
	}
}

// Registration does not prove ownership of an e-mail, so an ID-token login of its verified
// owner takes the account over: the squatter's password and sessions stop working.
func TestIdentityProviderLinkTakesOverTheAccount(t *testing.T) {
	squatter := register(t)
	r := do(t, "POST", "/api/auth/google", `{"id_token":"`+issuer.Token("owner-"+squatter.id, squatter.email, nil)+`"}`, newClientIP())
	u, _ := r.object(t)["user"].(map[string]any)
	if r.status != 200 || u["id"] != squatter.id || u["auth_provider"] != "google" {
		t.Fatalf("link: %d %s", r.status, r.body)
	}
	owner := sessionCookie(r)
	as(t, squatter.cookie, "GET", "/api/auth/me", "").wantError(t, 401, "session expired or invalid")
	r, _ = loginAs(t, squatter.email, squatter.password, newClientIP())
	r.wantError(t, 401, "invalid email or password")
	if r := as(t, owner, "GET", "/api/auth/me", ""); r.status != 200 {
		t.Fatalf("owner's session: %d %s", r.status, r.body)
	}
	recs := as(t, admin(t), "GET", "/api/admin/login-records?email="+squatter.email+"&success=true", "")
	if !strings.Contains(string(recs.body), `"reason":"linked"`) {
		t.Fatalf("no linked login record: %s", recs.body)
	}
}

func TestIdentityProviderFailuresAreLimited(t *testing.T) {
	ip := newClientIP()
	for i := 0; i < loginFailures; i++ {
		r := do(t, "POST", "/api/auth/google", `{"id_token":"`+issuer.Token("s", "x@example.com", map[string]any{"aud": "other"})+`"}`, ip)
		r.wantError(t, 401, "invalid identity token")
	}
	r := do(t, "POST", "/api/auth/google", `{"id_token":"`+issuer.Token("s", "x@example.com", nil)+`"}`, ip)
	r.wantError(t, 429, "too many failed login attempts")
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// The window is the client's, and its own: password logins are counted apart.
	b := register(t)
	if r, _ = loginAs(t, b.email, b.password, ip); r.status != 200 {
		t.Fatalf("a password login from the client whose ID-token window is full: %d %s", r.status, r.body)
	}
}

// The same passphrase typed in another Unicode normal form signs in.
func TestPasswordsCompareInNFC(t *testing.T) {
	email := "nfc." + dbPrefix + "@example.com"
	nfd, nfc := "cafe\u0301-au-lait", "caf\u00e9-au-lait"
	if r := do(t, "POST", "/api/auth/register", `{"email":"`+email+`","password":"`+nfd+`","first_name":"A","last_name":"B"}`, newClientIP()); r.status != 201 {
		t.Fatalf("register: %d %s", r.status, r.body)
	}
	if r, _ := loginAs(t, email, nfc, newClientIP()); r.status != 200 {
		t.Fatalf("NFC login of an NFD password: %d %s", r.status, r.body)
	}
}
