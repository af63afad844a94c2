package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/linkmesh/linkmesh/pkg/testenv"
	"github.com/linkmesh/linkmesh/tests/internal/stack"
)

// With a captcha verifier configured, anonymous creation needs a token the verifier accepts.
func TestCaptchaRequiredWhenConfigured(t *testing.T) {
	verifier := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		ok := r.PostForm.Get("secret") == "captcha-secret" && r.PostForm.Get("response") == "human"
		if r.PostForm.Get("response") == "flood" { // an answer that never ends
			for chunk := []byte(`{"success":true}` + strings.Repeat(" ", 4096)); r.Context().Err() == nil; {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		if ok {
			_, _ = w.Write([]byte(`{"success":true}`))
		} else {
			_, _ = w.Write([]byte(`{"success":false}`))
		}
	}))
	defer verifier.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svcs, err := stack.StartServices(ctx, stack.ServicesOptions{
		BinDir: stack.BinDir(), MongoURI: mongoURI, RedisURL: redisURL,
		DatabasePrefix: testenv.Name("e2e_captcha"), LogDir: t.TempDir(),
		Env: map[string]string{"LINKMESH_CAPTCHA_VERIFY_URL": verifier.URL, "LINKMESH_CAPTCHA_SECRET": "captcha-secret",
			// Clients of their own through a trusted hop; a login ceiling of two failures.
			"LINKMESH_TRUSTED_PROXIES": "127.0.0.1/32", "LINKMESH_LOGIN_MAX_FAILURES": "2",
			"LINKMESH_LOGIN_MAX_FAILURES_PER_EMAIL": "2", "LINKMESH_LOGIN_MAX_FAILURES_PER_CLIENT": "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svcs.Stop()
	post := func(body string) response { return postTo(t, svcs.GatewayURL+"/api/links/shorten", body) }
	post(`{"url":"https://93.184.216.34/c"}`).wantError(t, 400, "captcha verification failed")
	// The captcha is the edge's check and comes first; the account rule is the link service's.
	post(`{"url":"https://93.184.216.34/c","custom_code":"mine"}`).wantError(t, 400, "captcha verification failed")
	post(`{"url":"https://93.184.216.34/c","custom_code":"mine","captcha_token":"human"}`).wantError(t, 403, "custom_code requires an account")
	post(`{"url":"https://93.184.216.34/c","captcha_token":"robot"}`).wantError(t, 400, "captcha verification failed")
	// A verifier whose answer never ends gives no verdict: 503, at once, not a hang.
	start := time.Now()
	post(`{"url":"https://93.184.216.34/c","captcha_token":"flood"}`).wantError(t, 503, "captcha verification unavailable")
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("an endless verdict took %v", took)
	}
	r := post(`{"url":"https://93.184.216.34/c","captcha_token":"human"}`)
	if r.status != 201 {
		t.Fatalf("accepted token: %d %s", r.status, r.body)
	}
	// Abuse reports need the captcha too, and it comes before the code is looked up.
	code := r.object(t)["short_code"].(string)
	report := func(body string) response { return postTo(t, svcs.GatewayURL+"/api/reports", body) }
	report(`{"short_code":"zzzzzzz","reason":"spam"}`).wantError(t, 400, "captcha verification failed")
	report(`{"short_code":"`+code+`","reason":"spam","captcha_token":"robot"}`).wantError(t, 400, "captcha verification failed")
	if r := report(`{"short_code":"` + code + `","reason":"spam","captcha_token":"human"}`); r.status != 201 {
		t.Fatalf("report with an accepted token: %d %s", r.status, r.body)
	}

	// Registration needs the captcha too.
	from := func(ip, path, body string) response {
		t.Helper()
		a, err := stack.Send(client, svcs.GatewayURL, "POST", path, body, map[string]string{"X-Forwarded-For": ip})
		if err != nil {
			t.Fatal(err)
		}
		return response{status: a.Status, header: a.Header, body: a.Body}
	}
	// Redis outlives the stack: an address and clients of this run's own.
	locked := "locked." + testenv.Name("captcha") + "@example.com"
	account := `"email":"` + locked + `","password":"s3cret-passphrase"`
	registrant := newClientIP()
	from(registrant, "/api/auth/register", `{`+account+`,"first_name":"A","last_name":"B"}`).wantError(t, 400, "captcha verification failed")
	from(registrant, "/api/auth/register", `{`+account+`,"first_name":"A","last_name":"B","captcha_token":"robot"}`).wantError(t, 400, "captcha verification failed")
	if r := from(registrant, "/api/auth/register", `{`+account+`,"first_name":"A","last_name":"B","captcha_token":"human"}`); r.status != 201 {
		t.Fatalf("register with an accepted token: %d %s", r.status, r.body)
	}
	// Two clients fail once each: the e-mail's ceiling of two is full. A login for it then
	// needs the captcha instead of being refused: the owner gets in with one.
	for range 2 {
		from(newClientIP(), "/api/auth/login", `{"email":"`+locked+`","password":"wrong-password"}`).wantError(t, 401, "invalid email or password")
	}
	owner := newClientIP()
	from(owner, "/api/auth/login", `{`+account+`}`).wantError(t, 400, "captcha_token is required: this e-mail has too many failed logins")
	from(owner, "/api/auth/login", `{`+account+`,"captcha_token":"robot"}`).wantError(t, 400, "captcha verification failed")
	// The gateway decides what the captcha was; a body that claims it is not believed.
	from(owner, "/api/auth/login", `{`+account+`,"captcha":"passed"}`).wantError(t, 400, "captcha_token is required: this e-mail has too many failed logins")
	if r := from(owner, "/api/auth/login", `{`+account+`,"captcha_token":"human"}`); r.status != 200 || sessionCookie(r) == "" {
		t.Fatalf("login past the ceiling with an accepted token: %d %s", r.status, r.body)
	}
}

// postTo posts a JSON body to url.
func postTo(t *testing.T, url, body string) response {
	t.Helper()
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}
