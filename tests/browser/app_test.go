package browser

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

var hc = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// call sends a request to the gateway as a program would (outside the browser).
func call(t *testing.T, method, path, body string, headers map[string]string) stack.Answer {
	t.Helper()
	if headers == nil {
		headers = map[string]string{}
	}
	a, err := stack.Send(hc, gw, method, path, body, headers)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return a
}

var people atomic.Int64

func newEmail(kind string) string {
	return kind + itoa(int(people.Add(1))) + "." + dbPrefix + "@example.com"
}

func itoa(n int) string { return strconv.Itoa(n) }

var verifyLink = regexp.MustCompile(`https?://\S+/#/verify-email\?token=[A-Za-z0-9_-]+`)

// mailTo waits for the newest mail to address with subject and returns its text.
func mailTo(t *testing.T, address, subject string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		msgs := mails.Messages()
		for i := len(msgs) - 1; i >= 0; i-- {
			if m := msgs[i]; len(m.To) == 1 && m.To[0] == address && m.Subject == subject {
				return m.Text
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no mail %q to %s", subject, address)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// signIn signs in through the sign-in page and waits for the header to show the user.
func (b *tab) signIn(email, pw string) {
	b.t.Helper()
	b.visit("/#/login")
	b.see("main h1", "Sign in")
	b.fill("E-mail", email)
	b.fill("Password", pw)
	b.click("Sign in", "main")
	b.see(`[data-testid="current-user"]`, email)
}

// registerVerified registers in the browser, opens the verification link from the mail and
// signs in again (verifying ends every session), as a new user does.
func registerVerified(t *testing.T, b *tab, email string) {
	t.Helper()
	b.visit("/#/register")
	b.fill("First name", "Ada")
	b.fill("Last name", "Lovelace")
	b.fill("E-mail", email)
	b.fill("Password", password)
	b.click("Register", "main form")
	b.see(`[data-testid="current-user"]`, email)
	link := verifyLink.FindString(mailTo(t, email, "Verify your e-mail address for linkmesh"))
	if link == "" || !strings.HasPrefix(link, gw+"/#/verify-email") {
		t.Fatalf("the verification mail has no link to this deployment's page: %q", link)
	}
	b.visit(strings.TrimPrefix(link, gw))
	b.see("main", "Your address is verified")
	b.signIn(email, password)
}

// adminCookie signs the bootstrap super admin in through the API.
func adminCookie(t *testing.T) string {
	t.Helper()
	a := call(t, "POST", "/api/auth/login", `{"email":"`+adminEmail+`","password":"`+adminPassword+`"}`, nil)
	if a.Status != 200 {
		t.Fatalf("admin login: %d %s", a.Status, a.Body)
	}
	return cookieOf(t, a)
}

func cookieOf(t *testing.T, a stack.Answer) string {
	t.Helper()
	for _, c := range (&http.Response{Header: a.Header}).Cookies() {
		if c.Name == "go_session" && c.Value != "" {
			return "go_session=" + c.Value
		}
	}
	t.Fatalf("no session cookie in %v", a.Header)
	return ""
}
