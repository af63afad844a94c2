package browser

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// An anonymous visitor shortens a link on the home page, sees it with its QR code, and the
// link works; a destination the API refuses is explained with the API's own words.
func TestAnonymousCreation(t *testing.T) {
	b := open(t)
	b.visit("/")
	b.see("main h1", "Shorten a link")
	b.see("main", "Anonymous links last up to 30 days")
	b.check("create")

	b.expect(400, `^/api/links/shorten$`)
	b.fill("Destination URL", "ftp://example.com/file")
	b.click("Shorten", "main form")
	want := call(t, "POST", "/api/links/shorten", `{"url":"ftp://example.com/file","expiration_days":30}`, nil)
	var env struct{ Error string }
	_ = json.Unmarshal(want.Body, &env)
	if want.Status != 400 || env.Error == "" {
		t.Fatalf("the API answered %d %s", want.Status, want.Body)
	}
	b.see(`main [data-testid="alert-error"]`, env.Error)

	b.fill("Destination URL", "https://example.com/anonymous/page")
	b.fill("Expires in days", "7")
	b.click("Shorten", "main form")
	b.see(`[data-testid="create-result"]`, "Your short link")
	short := b.text(`[data-testid="short-url"]`)
	if !strings.HasPrefix(short, gw+"/") {
		t.Fatalf("short URL %q is not on %s", short, gw)
	}
	b.see(`[data-testid="create-result"]`, "to https://example.com/anonymous/page")
	b.waitFor(`document.querySelector('[data-testid="create-result"] img.qr').naturalWidth > 0`, "the QR code image")
	b.check("create-result")
	if a := call(t, "GET", strings.TrimPrefix(short, gw), "", nil); a.Status != 302 || a.Header.Get("Location") != "https://example.com/anonymous/page" {
		t.Fatalf("GET %s = %d %q", short, a.Status, a.Header.Get("Location"))
	}
}

// A person registers, verifies the address from the mail, signs in, makes an API token and
// a program uses it, creates a link with a custom code, finds it in the list, renews it,
// reads its analytics after real visits, and deletes it.
func TestAccountJourney(t *testing.T) {
	b := open(t)
	email := newEmail("ada")
	b.visit("/#/register")
	b.see("main h1", "Register")
	b.check("register")
	registerVerified(t, b, email)

	b.route("/dashboard")
	b.see("main h1", "Dashboard")
	b.see(`[data-testid="total-links"]`, "0")
	b.see("main", "No links yet")
	b.check("dashboard")

	// An API token, used by a program.
	b.route("/integrations")
	b.see("main", "API tokens")
	b.fill("Token name", "deploy script")
	b.fill("links:write", "true")
	b.fill("links:read", "true")
	b.fill("Expires in days", "30")
	b.click("Create token")
	b.waitFor(`(document.querySelector('[data-testid="token-secret"]')||{value:''}).value.startsWith('lm_')`, "the token's secret")
	secret := b.value(`[data-testid="token-secret"]`)
	b.see("main", "Copy this token now: it will not be shown again")
	b.see("main", "deploy script")
	bearer := map[string]string{"Authorization": "Bearer " + secret}
	if a := call(t, "POST", "/api/links/shorten", `{"url":"https://example.com/from-a-program"}`, bearer); a.Status != 201 {
		t.Fatalf("creation with the token: %d %s", a.Status, a.Body)
	}
	// Bulk creation from pasted lines.
	b.fill("Destinations, one per line", "https://example.com/bulk/1\n\nhttps://example.com/bulk/2")
	b.click("Create links")
	b.see(`[data-testid="bulk-1"]`, gw+"/")
	b.see(`[data-testid="bulk-0"]`, "https://example.com/bulk/1")
	b.check("integrations")

	// A custom code from the home page.
	code := "web" + strconv.FormatInt(time.Now().UnixNano()%1_000_000_000, 36)
	b.route("/")
	b.fill("Destination URL", "https://example.com/custom/destination")
	b.fill("Custom code (optional)", code)
	b.fill("Expires in days", "10")
	b.click("Shorten", "main form")
	b.see(`[data-testid="short-url"]`, gw+"/"+code)

	b.route("/links")
	b.see(`[data-testid="link-`+code+`"]`, "https://example.com/custom/destination")
	b.see("main table", "https://example.com/from-a-program")
	b.see("main table", "https://example.com/bulk/2")
	b.check("links")

	// Renew for 90 days.
	b.click("Renew "+code, "main table")
	b.fill("Days from now", "90", "dialog[open]")
	b.check("links-renew")
	b.click("Renew", "dialog[open]")
	b.see("main .alert-success", code+" now expires")
	a := call(t, "GET", "/api/user/links?q="+code, "", bearer)
	var list struct {
		Links []struct {
			ShortCode string    `json:"short_code"`
			ExpiresAt time.Time `json:"expires_at"`
		}
	}
	if err := json.Unmarshal(a.Body, &list); err != nil || len(list.Links) != 1 {
		t.Fatalf("list by token: %d %s", a.Status, a.Body)
	}
	if d := time.Until(list.Links[0].ExpiresAt); d < 89*24*time.Hour || d > 91*24*time.Hour {
		t.Fatalf("after renewing for 90 days the link expires in %v", d)
	}

	// Real visits, then the analytics page counts them.
	for i, ua := range []string{
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36",
		"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1",
		"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
	} {
		if a := call(t, "GET", "/"+code, "", map[string]string{"User-Agent": ua, "Referer": "https://news.example/item/" + itoa(i)}); a.Status != 302 {
			t.Fatalf("visit %d: %d", i, a.Status)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b.visit("/#/links/" + code)
		b.see("main h1", "Analytics of "+code)
		b.waitFor(`document.querySelector('[data-testid="analytics-clicks"]')`, "the totals")
		if b.text(`[data-testid="analytics-clicks"]`) == "3" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the analytics page shows %q clicks 30 s after 3 visits", b.text(`[data-testid="analytics-clicks"]`))
		}
		time.Sleep(time.Second)
	}
	b.see("#browsers", "Firefox")
	b.see("#referrers", "news.example")
	b.see("#devices", "mobile")
	b.check("analytics")
	b.fill("Show numbers as tables", "true")
	today := time.Now().UTC().Format("2006-01-02")
	var todayRow string
	b.waitFor(`document.querySelector('[data-testid="series-table"]')`, "the table of days")
	b.eval(`[...document.querySelectorAll('[data-testid="series-table"] tbody tr')].map((r) => r.innerText).find((t) => t.startsWith(`+js(today)+`)) || ''`, &todayRow)
	if f := strings.Fields(todayRow); len(f) != 3 || f[1] != "3" {
		t.Fatalf("today's row of the table is %q, want 3 clicks", todayRow)
	}
	b.check("analytics-table")

	// Delete it.
	b.route("/links")
	b.click("Delete "+code, "main table")
	b.see("dialog[open]", "cannot be undone")
	b.click("Delete", "dialog[open]")
	b.see("main .alert-success", code+" is deleted")
	b.waitFor(`!document.querySelector('[data-testid="link-`+code+`"]')`, "the row to go")
	if a := call(t, "GET", "/"+code, "", nil); a.Status != 404 {
		t.Fatalf("GET /%s after deleting = %d", code, a.Status)
	}

	b.route("/account")
	b.see("main", "This session")
	b.see("main", email)
	b.check("account")

	// Sign out: the header offers signing in again, and the session is gone for the API too.
	b.click("Sign out", "header")
	b.see("header", "Sign in")
	b.see("main h1", "Sign in")
	var me int
	b.eval(`fetch('/api/auth/me').then((r) => r.status)`, &me)
	if me != 401 {
		t.Fatalf("after signing out /api/auth/me answers %d", me)
	}
}

// A visitor reports a link; a moderator resolves the report by disabling the link from the
// reports queue; a browser that follows the link then gets the page that says so, with 403.
func TestReportedLinkIsDisabledFromTheQueue(t *testing.T) {
	code := shortenAnon(t, "https://phish.example/login")

	visitor := open(t)
	visitor.visit("/#/report?code=" + code)
	visitor.see("main h1", "Report")
	visitor.fill("Reason", "phishing")
	visitor.fill("Details", "It asks for my bank password.")
	visitor.check("report")
	visitor.click("Send report")
	visitor.see(`[data-testid="report-sent"]`, "Thank you")

	root := adminCookie(t)
	modEmail := newEmail("mod")
	modID := registerByAPI(t, modEmail)
	if a := call(t, "POST", "/api/admin/users/"+modID+"/role", `{"role":"moderator"}`, map[string]string{"Cookie": root}); a.Status != 200 {
		t.Fatalf("promote: %d %s", a.Status, a.Body)
	}
	reportID := pendingReport(t, root, code)

	mod := open(t)
	mod.signIn(modEmail, password)
	mod.see(`[data-testid="current-user"]`, "moderator")
	mod.route("/admin/reports")
	row := `[data-testid="row-` + reportID + `"]`
	mod.see(row, "It asks for my bank password.")
	mod.check("admin-reports")
	mod.click("Resolve and disable link", row)
	mod.see("main", "Report resolved; link "+code+" is disabled.")
	mod.waitFor(`!document.querySelector('`+row+`')`, "the report to leave the pending queue")

	v := open(t)
	v.expect(403, `^/`+code+`$`)
	v.visit("/" + code)
	v.see("h1", "This short link has been disabled")
	if s := v.pageStatus(); s != 403 {
		t.Fatalf("the page of a disabled link came with %d", s)
	}
	v.see("main", "Report a link")
	v.check("link-disabled")
	v.expect(404, `^/zz-no-such-link$`)
	v.visit("/zz-no-such-link")
	v.see("h1", "This short link does not exist")
	v.check("link-unknown")
}

// The super admin makes a user a moderator in the users list and finds the change in the
// audit log; the other admin sections show.
func TestSuperAdminChangesARoleAndReadsTheAuditLog(t *testing.T) {
	email := newEmail("promoted")
	id := registerByAPI(t, email)
	b := open(t)
	b.signIn(adminEmail, adminPassword)
	b.see(`[data-testid="current-user"]`, "super admin")
	b.route("/admin")
	b.waitFor(`parseInt((document.querySelector('[data-testid="overview-users-total"]')||{innerText:''}).innerText, 10) >= 2`, "the users counted")
	b.check("admin-overview")

	b.route("/admin/users")
	b.fill("Search e-mail or name", email)
	b.click("Search", "main")
	row := `[data-testid="row-` + id + `"]`
	b.see(row, email)
	b.check("admin-users")
	b.fill("Role of "+email, "moderator", row)
	b.click("Save role", row)
	b.see("main", email+" is now moderator.")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(call(t, "GET", "/api/admin/users?q="+email, "", map[string]string{"Cookie": adminCookie(t)}).Body), `"role":"moderator"`) {
		if time.Now().After(deadline) {
			t.Fatal("the role change did not reach the API")
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Ban another user with their links, then unban them.
	troublemaker := newEmail("troublemaker")
	tid := registerByAPI(t, troublemaker)
	login := call(t, "POST", "/api/auth/login", `{"email":"`+troublemaker+`","password":"`+password+`"}`, nil)
	code := ""
	{
		a := call(t, "POST", "/api/links/shorten", `{"url":"https://spam.example/offer"}`, map[string]string{"Cookie": cookieOf(t, login)})
		var l struct {
			ShortCode string `json:"short_code"`
		}
		if err := json.Unmarshal(a.Body, &l); a.Status != 201 || err != nil {
			t.Fatalf("their link: %d %s", a.Status, a.Body)
		}
		code = l.ShortCode
	}
	b.fill("Search e-mail or name", troublemaker)
	b.click("Search", "main")
	trow := `[data-testid="row-` + tid + `"]`
	b.see(trow, troublemaker)
	b.click("Ban", trow)
	b.fill("Reason", "spam", "dialog[open]")
	b.fill("Also disable their links", "true", "dialog[open]")
	b.check("admin-users-ban")
	b.click("Ban", "dialog[open]")
	b.see("main", troublemaker+" is banned. 1 link disabled.")
	if a := call(t, "GET", "/"+code, "", nil); a.Status != 403 {
		t.Fatalf("their link after the ban with links = %d, want 403", a.Status)
	}
	b.see(trow, "banned")
	b.click("Unban", trow)
	b.see("main", troublemaker+" is active again.")

	b.route("/admin/audit")
	b.see("main table", id)
	b.see("main table", "role")
	b.check("admin-audit")
	for _, s := range []string{"links", "requests", "logins"} {
		b.route("/admin/" + s)
		b.waitFor(`document.querySelector('main table') || document.querySelector('main .empty')`, "the "+s+" section")
		b.check("admin-" + s)
	}
}

// A banned user who still holds a session sees why, and an action the API refuses says so.
func TestBannedUserSeesWhy(t *testing.T) {
	email := newEmail("banned")
	b := open(t)
	registerVerified(t, b, email)
	root := adminCookie(t)
	id := userID(t, root, email)
	if a := call(t, "POST", "/api/admin/users/"+id+"/ban", `{"reason":"spam campaign"}`, map[string]string{"Cookie": root}); a.Status != 200 {
		t.Fatalf("ban: %d %s", a.Status, a.Body)
	}
	b.expect(403, `^/api/user/dashboard$`)
	b.expect(403, `^/api/links/shorten$`)
	// A ban reaches every gateway's cached sessions within a second.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b.visit("/#/dashboard")
		b.waitFor(`document.querySelector('[data-testid="current-user"]')`, "the signed-in header")
		if strings.Contains(b.text(`main`), "Your account is banned") || time.Now().After(deadline) {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if !strings.Contains(b.text("main"), "Your account is banned") {
		a := call(t, "GET", "/api/admin/users?q="+email, "", map[string]string{"Cookie": root})
		t.Logf("the API says of the user: %s", a.Body)
	}
	b.see(`[data-testid="restricted"]`, "Your account is banned: spam campaign")
	b.route("/")
	b.fill("Destination URL", "https://example.com/after-ban")
	b.click("Shorten", "main form")
	b.waitFor(`document.querySelector('main form [data-testid="alert-error"]')`, "the refusal")
	if msg := b.text(`main form [data-testid="alert-error"]`); !strings.Contains(strings.ToLower(msg), "banned") {
		t.Fatalf("the refusal says %q", msg)
	}
	b.check("banned")
}

// The pages reached from mails and the sign-in pages pass axe and are photographed.
func TestPublicPages(t *testing.T) {
	b := open(t)
	for _, p := range []struct{ path, name, h1 string }{
		{"/#/login", "login", "Sign in"},
		{"/#/forgot-password", "forgot-password", "Reset your password"},
		{"/#/reset-password?token=x", "reset-password", "Choose a new password"},
		{"/#/report", "report-empty", "Report"},
	} {
		b.visit(p.path)
		b.see("main h1", p.h1)
		b.check(p.name)
	}
	// Fragments are decoded once: a query keeps its "&" and "+", a malformed escape is text.
	b.visit("/#/report?code=" + "a%26b%2Bc")
	b.waitFor(`document.querySelector('main form')`, "the report form")
	if got := b.text("main h1"); got == "" {
		t.Fatal("the report page shows no heading")
	}
	var prefilled string
	b.eval(`[...document.querySelectorAll('main input')].map((i) => i.value).find((v) => v) || ''`, &prefilled)
	if prefilled != "a&b+c" {
		t.Fatalf("the report form took the code %q from the fragment, want %q", prefilled, "a&b+c")
	}
	b.visit("/#/%E0%A4")
	b.see("main h1", "Not found")
	// An identity provider's answer that this tab did not ask for signs nobody in.
	b.visit("/#state=forged&id_token=x.y.z")
	b.see("main", "Signing in with Google did not work: the answer does not belong to this sign-in")
	b.check("login-refused-answer")

	b.expect(400, `^/api/auth/verify-email$`)
	b.visit("/#/verify-email?token=not-a-token")
	b.waitFor(`document.querySelector('main [data-testid="alert-error"]')`, "the refusal of a made-up token")
	b.check("verify-email-refused")
}

// registerByAPI registers and verifies an account as a program would; it returns its id.
func registerByAPI(t *testing.T, email string) string {
	t.Helper()
	a := call(t, "POST", "/api/auth/register", `{"email":"`+email+`","password":"`+password+`","first_name":"Grace","last_name":"Hopper"}`, nil)
	var r struct{ User struct{ ID string } }
	if err := json.Unmarshal(a.Body, &r); a.Status != 201 || err != nil {
		t.Fatalf("register: %d %s", a.Status, a.Body)
	}
	m := verifyLink.FindString(mailTo(t, email, "Verify your e-mail address for linkmesh"))
	token := m[strings.LastIndex(m, "=")+1:]
	if a := call(t, "POST", "/api/auth/verify-email", `{"token":"`+token+`"}`, nil); a.Status != 200 {
		t.Fatalf("verify: %d %s", a.Status, a.Body)
	}
	return r.User.ID
}

func userID(t *testing.T, root, email string) string {
	t.Helper()
	var r struct{ Users []struct{ ID, Email string } }
	a := call(t, "GET", "/api/admin/users?q="+email, "", map[string]string{"Cookie": root})
	if err := json.Unmarshal(a.Body, &r); err != nil || len(r.Users) != 1 {
		t.Fatalf("find %s: %d %s", email, a.Status, a.Body)
	}
	return r.Users[0].ID
}

func pendingReport(t *testing.T, root, code string) string {
	t.Helper()
	var r struct {
		Reports []struct {
			ID        string `json:"id"`
			ShortCode string `json:"short_code"`
		}
	}
	a := call(t, "GET", "/api/admin/reports?status=pending&page_size=100", "", map[string]string{"Cookie": root})
	if err := json.Unmarshal(a.Body, &r); err != nil {
		t.Fatalf("reports: %d %s", a.Status, a.Body)
	}
	for _, rep := range r.Reports {
		if rep.ShortCode == code {
			return rep.ID
		}
	}
	t.Fatalf("no pending report of %s in %s", code, a.Body)
	return ""
}
